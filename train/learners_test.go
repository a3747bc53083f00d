package train_test

// The external tests train with the learners and the sampler trainer
// registers.
import (
	_ "github.com/agentrl/agentrl/train/inprocess"
	_ "github.com/agentrl/agentrl/train/served"
	_ "github.com/agentrl/agentrl/train/tinkerlearner"
)
