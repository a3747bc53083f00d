package train

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/agentrl/agentrl/envs"
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
// and Save after each checkpointed step. Policy scores the collapse
// metrics and, unless a Sampler serves a copy of the weights elsewhere,
// samples the rollouts; it reflects every completed Update.
//
// The loss is agentrl's on every backend: implementations evaluate it with
// package algos (Preset.ActorLoss, Preset.CriticLoss) from the per-token
// log-probs, entropies and values their models produce, and feed the
// per-token gradients back (a local model's Backward, or per-token loss
// weights for a remote trainer). Mini-batches are MiniBatchUpdates', so
// that every backend takes the same optimizer steps.
//
// A LearnerFactory builds a learner: from the run's starting weights for a
// new run, from the directory Save wrote for a resumed one. A learner that
// implements io.Closer is closed when the run ends.
type Learner interface {
	// Policy is the policy to score (and by default sample) with.
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
	// The loop never cancels ctx during an Update: stopped between two
	// optimizer steps, the weights would be no step's. A remote learner
	// bounds each call by its own timeouts.
	Update(ctx context.Context, seqs *Sequences, opts UpdateOptions) (UpdateStats, error)
	// Save writes the learner's complete state (weights, optimizer state,
	// critic, reference, tokenizer) into dir, an empty directory that the
	// caller then makes the run's checkpoint atomically.
	Save(ctx context.Context, dir string) error
	// Model describes the trained model for the run's identity and logs.
	Model() ModelInfo
}

// AdapterSaver is a Learner whose trained weights are LoRA adapters that
// a server can load: the served sampler (server.url) writes them after
// every step and the server samples from them.
type AdapterSaver interface {
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

// Snapshotter is implemented by learners whose current weights can be
// frozen into a policy of their own, which later updates leave alone: a
// copy of an in-process model, or a Tinker server's saved sampler weights.
// With rollout.staleness k ≥ 1 the loop samples from such snapshots while
// the learner trains (snapshotSampler).
type Snapshotter interface {
	Snapshot(ctx context.Context) (policy.Policy, error)
}

// Recoverer is implemented by learners whose state lives on a server that
// may restart (a Tinker server). After a step failed, the loop calls
// Recover, which waits for the server (within the learner's own outage
// budget) and reports whether the server has lost the learner's state;
// the run then resumes from its last checkpoint in the same process, and
// redoes the steps after it with the same seeds. err says why the server
// could not be asked.
type Recoverer interface {
	Recover(ctx context.Context) (lost bool, err error)
}

// ArithmeticReporter is implemented by learners whose updates are exact
// on this build: ArithmeticID names the build's rounding (for the native
// kernels, native.ArithmeticID). Every checkpoint records it, and resuming
// one recorded under another ID warns that the run goes on correctly but
// leaves the uninterrupted run's bits. An empty ID records nothing.
type ArithmeticReporter interface {
	ArithmeticID() string
}

// RemoteWeights is implemented by learners whose weights stay on a server:
// the checkpoint records where they are, and the run's summary says so
// instead of suggesting `trainer eval` and `trainer serve` on it.
type RemoteWeights interface {
	// WeightsNote says where the weights of the checkpoint in dir are.
	WeightsNote(dir string) string
}

// ProbeText is the text the start-up checks of remote learners and
// samplers tokenize and score, to tell whether a server serves the run's
// model: words, digits, punctuation, grid symbols and text outside ASCII,
// the kinds of text the environments write.
const ProbeText = "Probe: the player (P) stands left of the box (X) at row 2, column 3; 42 moves left. " +
	"Ünïcödé — 世界 ✓\n#####\n#_P_#\n<think>push right</think><answer>Right</answer>"

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

// A LearnerFactory builds a run's learner: from the run's starting weights
// (Start.ResumeFrom empty), or restored from the checkpoint directory its
// Save wrote.
type LearnerFactory func(ctx context.Context, start *Start) (Learner, error)

// Start is what a LearnerFactory (and a SamplerFactory) is given.
type Start struct {
	// Config is the run's configuration, validated.
	Config Config
	// ResumeFrom is the checkpoint directory to restore the learner from;
	// empty for a new run.
	ResumeFrom string
	// Log receives progress and warnings.
	Log *slog.Logger
	// Demonstrations is the environment an expert plays for a warm start:
	// env.config with warm_start.env_config over it.
	Demonstrations *envs.Factory
	// Levels returns n level seeds from base upward, skipping every seed
	// whose layout is a validation layout, so that no training or
	// warm-start level is a held-out one.
	Levels func(base uint64, n int) ([]uint64, error)
	// Now is the clock; only logs and timings read it.
	Now func() time.Time

	warmStart time.Duration
}

// ReportWarmStart records the wall time the factory spent training the
// starting model (a warm start built now, not loaded from a cache): the
// run's summary reports it apart from the RL steps.
func (s *Start) ReportWarmStart(d time.Duration) { s.warmStart = d }

// LearnerRegistration makes a learner available by name.
type LearnerRegistration struct {
	// Description is one line for listings and errors.
	Description string
	// Check, if set, vets a configuration before the run directory is
	// touched (it may read the file system): for example, that model.init
	// is a model the learner can train.
	Check func(Config) error
	// New builds the learner.
	New LearnerFactory
}

var (
	registryMu sync.RWMutex
	learners   = map[string]LearnerRegistration{}
	samplers   = map[string]SamplerRegistration{}
)

// RegisterLearner makes a learner available under name, for the
// configuration's learner key (see Config.LearnerName). Packages register
// their learners from init functions, as environments register with
// package envs: train/inprocess registers "native" and train/tinkerlearner
// "tinker". It panics if name is empty, taken, or r has no New.
func RegisterLearner(name string, r LearnerRegistration) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if name == "" || r.New == nil {
		panic("train: RegisterLearner needs a name and a New function")
	}
	if _, dup := learners[name]; dup {
		panic(fmt.Sprintf("train: learner %q registered twice", name))
	}
	learners[name] = r
}

// Learners lists the registered learners' names, sorted.
func Learners() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return slices.Sorted(maps.Keys(learners))
}

// ErrNoLearner is returned (wrapped) when the configuration names a
// learner no package has registered.
var ErrNoLearner = errors.New("no such learner")

func lookupLearner(name string) (LearnerRegistration, error) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	r, ok := learners[name]
	if !ok {
		hint := map[string]string{LearnerNative: "github.com/agentrl/agentrl/train/inprocess",
			LearnerTinker: "github.com/agentrl/agentrl/train/tinkerlearner"}[name]
		if hint != "" {
			return r, fmt.Errorf("learner %q: %w; import %s (trainer does) to register it", name, ErrNoLearner, hint)
		}
		return r, fmt.Errorf("learner %q: %w (registered: %v)", name, ErrNoLearner, slices.Sorted(maps.Keys(learners)))
	}
	return r, nil
}

// testHookMiniBatch, when set by a test, runs after each optimizer step
// of MiniBatchUpdates with the number done and the number in all.
var testHookMiniBatch func(done, all int)

// MiniBatchUpdates runs step on algo.ppo_epochs passes over seqs in
// shuffled mini-batches of algo.ppo_mini_batch_size sequences (the order
// seeded by opts.Seed), and averages the metrics of the steps that ran; a
// step that reports !ok was skipped (a non-finite loss or gradient) and is
// counted in UpdateStats.Skipped. Every learner takes its optimizer steps
// through it, so that backends see the same mini-batches in the same order.
func MiniBatchUpdates(seqs *Sequences, algo AlgoConfig, opts UpdateOptions, step func(mb *Sequences) (metrics map[string]float64, ok bool, err error)) (UpdateStats, error) {
	st := UpdateStats{Metrics: map[string]float64{}}
	sums := map[string]float64{}
	rng := rand.New(rand.NewPCG(opts.Seed, 0))
	n := seqs.Len()
	for range algo.Epochs {
		order := rng.Perm(n)
		for lo := 0; lo < n; lo += algo.MiniBatch {
			mb := seqs.Subset(order[lo:min(lo+algo.MiniBatch, n)])
			st.MiniBatches++
			m, ok, err := step(mb)
			if err != nil {
				return st, err
			}
			if testHookMiniBatch != nil {
				testHookMiniBatch(st.MiniBatches, algo.Epochs*((n+algo.MiniBatch-1)/algo.MiniBatch))
			}
			if !ok {
				st.Skipped++
				continue
			}
			for k, v := range m {
				sums[k] += v
			}
		}
	}
	if done := st.MiniBatches - st.Skipped; done > 0 {
		for k, v := range sums {
			st.Metrics[k] = v / float64(done)
		}
	}
	st.Metrics["actor/lr"] = opts.LR
	st.Metrics["actor/skipped_updates"] = float64(st.Skipped)
	return st, nil
}
