package tinkerlearner

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentrl/agentrl/client/tinker"
	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/train"
)

// What each engine does with the settings a run sends, checked before the
// first step (docs/tinker.md, "Engines", holds the same table). A finding
// is fatal where the run's result would be other than its configuration
// says and nothing can be known to make up for it; the others are
// reported (IgnoredSettings, and the log) and the run goes on.

// skyRLAlpha is the LoRA alpha SkyRL's server fixes (its create_model
// replaces lora_config.alpha with 32.0).
const skyRLAlpha = 32

// skyRLJAXMaxRank is SkyRL's JAX backend's default max_lora_rank.
const skyRLJAXMaxRank = 32

// finding is one setting an engine does not apply as configured.
type finding struct {
	key   string
	msg   string // what the engine does instead
	fatal bool
}

func (f finding) String() string { return f.key + ": " + f.msg }

// engineFindings checks cfg against what engine e honours.
func engineFindings(e tinker.Engine, cfg train.Config) []finding {
	var out []finding
	add := func(fatal bool, key, format string, args ...any) {
		out = append(out, finding{key: key, msg: fmt.Sprintf(format, args...), fatal: fatal})
	}
	a, lora := cfg.Algo, cfg.Model.LoRA
	ppo := cfg.Tinker.Loss == train.TinkerLossPPO

	// Every engine: the API's loss inputs and outputs.
	switch {
	case ppo && a.UseKLLoss:
		add(true, "algo.use_kl_loss", "the engine's built-in ppo loss (tinker.loss ppo) has no KL term; use tinker.loss linearised, which applies it in the learner")
	case ppo && a.EntropyCoeff != 0:
		add(true, "algo.entropy_coeff", "the engine's built-in ppo loss (tinker.loss ppo) has no entropy bonus; use tinker.loss linearised or set it to 0")
	case !ppo && a.EntropyCoeff != 0:
		add(false, "algo.entropy_coeff", "no engine returns the next-token distribution: the bonus's gradient is its score-function estimate on the sampled tokens, and actor/entropy their mean −log π")
	}
	attn, mlp, exact := loraGroups(lora.Targets)
	if lora.Rank > 0 && !exact {
		add(true, "model.lora.targets", "the API names adapters by group only (train_attn: q, k, v, o; train_mlp: gate, up, down): %v would train %s", lora.Targets, groupsTrained(attn, mlp))
	}
	allTargets := attn && mlp && exact

	switch e {
	case tinker.EngineAgentrl:
		// Applies everything it is sent (server/tinkerapi).
	case tinker.EngineTinker:
		if lora.Rank == 0 {
			add(true, "model.lora.rank", "0 trains every weight, which hosted Tinker does not offer (LoRA adapters only): set a rank")
		} else {
			add(false, "model.lora.alpha", "hosted Tinker's API has no alpha (the SDK's LoraConfig is rank, seed and train_*): the service scales the adapters itself")
		}
	case tinker.EngineSkyRLJAX, tinker.EngineSkyRLTrain:
		name := "SkyRL-JAX"
		if e == tinker.EngineSkyRLTrain {
			name = "SkyRL-Train"
		}
		switch {
		case lora.Rank == 0 && e == tinker.EngineSkyRLJAX:
			add(true, "model.lora.rank", "0 trains every weight, which SkyRL's JAX backend does not (LoRA ranks 1 to its max_lora_rank, 32 by default): set a rank")
		case lora.Rank > skyRLJAXMaxRank && e == tinker.EngineSkyRLJAX:
			add(false, "model.lora.rank", "%d is above SkyRL-JAX's default max_lora_rank of %d: the server refuses it unless it was started with a larger one", lora.Rank, skyRLJAXMaxRank)
		}
		if lora.Rank > 0 && lora.Alpha != skyRLAlpha {
			add(true, "model.lora.alpha", "SkyRL's server fixes alpha at %d (its create_model drops lora_config.alpha), so %v would not be the adapters' scale: set model.lora.alpha: %d", skyRLAlpha, lora.Alpha, skyRLAlpha)
		}
		if lora.Rank > 0 && exact {
			what := "its trainer config's target modules"
			if e == tinker.EngineSkyRLJAX {
				what = "every attention and MLP projection, and the embedding and unembedding too"
			}
			add(!allTargets, "model.lora.targets", "SkyRL's server drops train_attn, train_mlp and train_unembed: %s adapts %s", name, what)
		}
		if e == tinker.EngineSkyRLJAX {
			if a.GradClip > 0 {
				add(true, "algo.grad_clip", "SkyRL's server drops adam_params.grad_clip_norm and its JAX backend does not clip, so the norm would not be held to %v: set algo.grad_clip: 0", a.GradClip)
			}
			add(false, "tinker.loss", "SkyRL-JAX averages the accumulated gradient over the step's data, where the learner's loss is their sum: Adam's step is the same up to its eps, and actor/grad_norm is the norm of the mean")
		} else {
			add(false, "algo.grad_clip", "SkyRL's server drops adam_params.grad_clip_norm: SkyRL-Train clips at its own trainer.policy.optimizer_config.max_grad_norm (1.0 unless the server was started otherwise), not at %v", a.GradClip)
			add(false, "algo.weight_decay", "SkyRL-Train applies only adam_params.learning_rate: its weight decay is its trainer config's (0.01 unless the server was started otherwise), not %v", a.WeightDecay)
			b := tinkerAdam(a, 0)
			add(false, "adam_params.beta1, beta2, eps", "SkyRL-Train applies only adam_params.learning_rate: Adam's betas and eps are its trainer config's (betas 0.9, 0.999 unless the server was started otherwise), not the learner's %v, %v, %v", b.Beta1, b.Beta2, b.Eps)
		}
	default:
		add(false, "tinker.url", "the server's engine is not one this learner knows, so what it does with model.lora.alpha and targets, algo.grad_clip, algo.weight_decay and Adam's betas and eps is unverified (docs/tinker.md, Engines)")
	}
	return out
}

// loraGroups reports which of the API's adapter groups targets covers,
// and whether it is exactly a union of whole groups.
func loraGroups(targets []string) (attn, mlp, exact bool) {
	if len(targets) == 0 {
		targets = native.LoRATargets()
	}
	var na, nm int
	for _, t := range targets {
		switch t {
		case "q_proj", "k_proj", "v_proj", "o_proj":
			na++
		default:
			nm++
		}
	}
	attn, mlp = na > 0, nm > 0
	exact = (na == 0 || na == 4) && (nm == 0 || nm == 3)
	return attn, mlp, exact
}

func groupsTrained(attn, mlp bool) string {
	var g []string
	if attn {
		g = append(g, "q, k, v and o")
	}
	if mlp {
		g = append(g, "gate, up and down")
	}
	return strings.Join(g, " and ")
}

// checkEngine reports the findings for e: an error naming every fatal one,
// else the others as lines for IgnoredSettings.
func checkEngine(e tinker.EngineReport, cfg train.Config) ([]string, error) {
	var lines, fatal []string
	for _, f := range engineFindings(e.Engine, cfg) {
		if f.fatal {
			fatal = append(fatal, f.String())
		} else {
			lines = append(lines, f.String())
		}
	}
	if len(fatal) > 0 {
		return lines, fmt.Errorf("tinker: the server's engine (%s: %s) would not train as configured:\n  %s", e.Engine, strings.Join(e.Evidence, "; "), strings.Join(fatal, "\n  "))
	}
	return slices.Clip(lines), nil
}

// errNoProbe is returned when the tokenizer gives too short a probe to
// tell SkyRL's backends apart.
var errNoProbe = errors.New("tinker: the probe text encodes to fewer than two tokens")
