package train

import (
	"context"
	"errors"
	"math"

	"github.com/agentrl/agentrl/policy"
)

// Learner owns what a run trains and what training needs besides: the
// policy being trained (the actor), its critic (estimators with a value
// function), the frozen reference policy (any KL term) and the optimizer
// state of each. The loop never touches a model directly; it calls, for
// every step with a non-empty batch:
//
//	Prepare(seqs)         values and reference log-probs (and, recomputing,
//	                      the old log-probs) under the weights that sampled
//	                      the batch, computed once per step
//	(advantages, with algos, from seqs and Prepare's results)
//	Update(seqs, opts)    ppo_epochs × mini-batches of optimizer steps
//
// and Save after each checkpointed step. Policy samples the rollouts (in
// process; with server.url a served copy of the weights samples them, fed
// by adapterSaver) and scores the collapse metrics; it reflects every
// completed Update.
//
// The loss is agentrl's on every backend: implementations evaluate it with
// package algos (Preset.ActorLoss, Preset.CriticLoss) from the per-token
// log-probs, entropies and values their models produce, and feed the
// per-token gradients back (a local model's Backward, or per-token loss
// weights for a remote trainer). A new run builds its learner from the
// starting weights; a resumed run rebuilds it from the directory Save
// wrote (each implementation has its own constructors for both).
type Learner interface {
	// Policy is the policy to sample and score with.
	Policy() policy.Policy
	// Prepare fills seqs.OldValues when there is a critic and
	// seqs.RefLogProb when there is a reference policy. With
	// algo.recompute_old_log_prob it also recomputes seqs.OldLogProb under
	// the current weights (those that sampled the batch), moving the
	// sampler's into seqs.SamplerLogProb; the recomputed rows are zero
	// off the mask, as the sampler's are.
	Prepare(ctx context.Context, seqs *Sequences) error
	// Update trains on seqs, whose Advantages (and Returns, with a critic)
	// are set. A mini-batch whose loss or gradient is not finite is
	// skipped and counted in UpdateStats.Skipped, not returned as an error.
	Update(ctx context.Context, seqs *Sequences, opts UpdateOptions) (UpdateStats, error)
	// Save writes the learner's complete state (weights, optimizer state,
	// critic, reference, tokenizer) into dir, an empty directory that the
	// caller then makes the run's checkpoint atomically.
	Save(ctx context.Context, dir string) error
	// Model describes the trained model for the run's identity and logs.
	Model() ModelInfo
}

// adapterSaver is a Learner whose trained weights are LoRA adapters that
// a server can load: with server.url the loop writes them after every
// update and the server samples from them.
type adapterSaver interface {
	// SaveAdapter writes the current adapters as a PEFT LoRA adapter
	// directory into dir (an empty directory).
	SaveAdapter(ctx context.Context, dir string) error
}

// GradientAnalyzer is implemented by learners that can measure the terms
// of the actor gradient without updating (RAGEN-2's gradient analysis:
// g_total = g_task + g_reg, compared across reward-variance buckets).
type GradientAnalyzer interface {
	// GradientNorms returns the global norms of the task, entropy and KL
	// terms of the actor gradient on seqs (advantages filled in), as if
	// seqs were one batch; the weights do not change.
	GradientNorms(ctx context.Context, seqs *Sequences) (GradNorms, error)
}

// GradNorms are the norms of the actor gradient's terms.
type GradNorms struct {
	Task, Entropy, KL float64
}

// UpdateOptions are the per-step settings of Learner.Update.
type UpdateOptions struct {
	LR, CriticLR float64 // this step's learning rates
	Seed         uint64  // seeds the mini-batch shuffling
}

// UpdateStats are the learner's metrics of one Update: verl's actor/* and
// critic/* names averaged over the mini-batches that ran, plus
// actor/grad_norm, actor/lr and actor/skipped_updates.
type UpdateStats struct {
	Metrics     map[string]float64
	MiniBatches int // mini-batch updates attempted
	Skipped     int // of which skipped for a non-finite loss or gradient
}

// ModelInfo describes a learner's model. It is recorded in the run's
// identity (run.json and every checkpoint), beside the settings that the
// resume check compares.
type ModelInfo struct {
	Kind            string         `json:"kind"`   // "native", …
	Config          map[string]any `json:"config"` // the architecture, as the backend describes it
	Params          int            `json:"params"`
	TokenizerSHA256 string         `json:"tokenizer_sha256"`
	// LoRA describes the adapters when the run trains them (model.lora).
	LoRA *LoRAInfo `json:"lora,omitempty"`
}

// LoRAInfo describes the trained adapters of a run.
type LoRAInfo struct {
	Rank            int      `json:"rank"`
	Alpha           float64  `json:"alpha"`
	Targets         []string `json:"targets"`
	TrainableParams int      `json:"trainable_params"`
}

// errNonFinite marks a mini-batch whose loss inputs or loss are not finite:
// a diverged model, whose update is skipped.
var errNonFinite = errors.New("non-finite loss")

// finite reports whether every value is a finite number.
func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// finiteRows reports whether x is finite wherever mask is set.
func finiteRows(x [][]float64, mask [][]bool) bool {
	for i, row := range x {
		for j, v := range row {
			if mask[i][j] && !finite(v) {
				return false
			}
		}
	}
	return true
}
