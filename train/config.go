package train

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentrl/agentrl/algos"
	"github.com/agentrl/agentrl/internal/yamlpath"
	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/rollout"
)

// Config is a complete training run. It is decoded strictly from YAML: an
// unknown key anywhere is an error naming it. Keys left out keep the values
// of Default (with the algorithm preset named by algo.preset).
type Config struct {
	// Learner names the registered learner that trains the run (see
	// RegisterLearner); empty picks "tinker" with tinker.url and "native"
	// otherwise.
	Learner    string           `yaml:"learner,omitempty"`
	Run        RunConfig        `yaml:"run"`
	Env        EnvConfig        `yaml:"env"`
	Rollout    rollout.Config   `yaml:"rollout"`
	Model      ModelConfig      `yaml:"model"`
	Algo       AlgoConfig       `yaml:"algo"`
	Filter     FilterConfig     `yaml:"filter"`
	Collapse   CollapseConfig   `yaml:"collapse"`
	Validation ValidationConfig `yaml:"validation"`
	WarmStart  WarmStartConfig  `yaml:"warm_start"`
	Checkpoint CheckpointConfig `yaml:"checkpoint"`
	Analysis   AnalysisConfig   `yaml:"analysis"`
	Server     ServerConfig     `yaml:"server"`
	Tinker     TinkerConfig     `yaml:"tinker"`
}

// ServerConfig samples the rollouts on a served copy of the model: a vLLM
// server (or `trainer serve`, or any server of the same OpenAI-compatible
// API with runtime LoRA loading) serving the Hugging Face model of
// model.init, while the learner trains LoRA adapters on that model in
// process. After every step the run writes the adapters as a PEFT adapter
// directory and the server loads them under a new name, which every
// trajectory records as its policy version (see docs/training.md,
// "Rollouts on a served model"). None of these keys is part of the run
// identity: they say where the sampler runs, not what the run computes.
type ServerConfig struct {
	// URL is the server's base URL (http://host:8000; a trailing /v1 is
	// accepted), or several separated by commas, all serving the same
	// model: requests go to the least busy, and adapters are loaded on
	// every one. Empty (the default): rollouts sample in process.
	URL string `yaml:"url"`
	// APIKey is sent as a bearer token (vLLM's --api-key); empty means
	// $AGENTRL_API_KEY. It is never written to the run directory.
	APIKey string `yaml:"api_key"`
	// Model is the served base model's name (vLLM's --served-model-name,
	// by default the path given to `vllm serve`); empty means the first
	// base model the server lists.
	Model string `yaml:"model"`
	// AdapterDir is where the run writes each policy version's PEFT
	// adapter, one directory per version, named as the server loads it.
	// Empty means <run.out>/adapters.
	AdapterDir string `yaml:"adapter_dir"`
	// AdapterDirOnServer is AdapterDir as the server sees it, when the
	// server mounts it elsewhere (another machine, a container); the
	// lora_path of each load is this directory joined with the version's
	// name. Empty means AdapterDir's absolute path.
	AdapterDirOnServer string `yaml:"adapter_dir_on_server"`
	// KeepAdapters keeps every version's adapter directory; by default a
	// version's directory is removed once the server has unloaded it (the
	// checkpoints keep the adapters either way).
	KeepAdapters bool `yaml:"keep_adapters"`
	// Outage is how long a request keeps waiting for servers that stopped
	// answering (connection refused, 5xx) before the run gives up: a vLLM
	// restart takes minutes. A server that comes back without the run's
	// adapter is given it again, and the requests are redone with their
	// seeds, so the run goes on as if nothing happened. 0 gives up after a
	// few quick retries.
	Outage time.Duration `yaml:"outage"`
	// ProbeTolerance is the largest mean |Δ log-prob| allowed, at start,
	// between the server and the learner scoring a probe conversation
	// with the first adapter loaded: above it the server serves another
	// model than model.init (same tokenizer, other weights). vLLM's bf16
	// kernels differ from the learner's float32 by about 1e-3 to 1e-2;
	// a negative value skips the check.
	ProbeTolerance float64 `yaml:"probe_tolerance"`
}

// Enabled reports whether rollouts sample on a server.
func (c ServerConfig) Enabled() bool { return strings.TrimSpace(c.URL) != "" }

// URLs returns the comma-separated base URLs.
func (c ServerConfig) URLs() []string {
	var out []string
	for u := range strings.SplitSeq(c.URL, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// MarshalYAML writes the section without the API key, so that neither
// the run directory's config.yaml nor -dry-run shows it.
func (c ServerConfig) MarshalYAML() (any, error) {
	type plain ServerConfig
	p := plain(c)
	p.APIKey = ""
	return p, nil
}

// AnalysisConfig holds diagnostics that measure without changing the run.
type AnalysisConfig struct {
	// GradientEvery measures, every N steps (0: never), the norms of the
	// actor gradient's task, entropy and KL terms in each reward-variance
	// bucket of the step's batch before filtering, without an update
	// (RAGEN-2's gradient analysis).
	GradientEvery int `yaml:"gradient_every"`
	// GradientBuckets is the number of buckets the groups are ranked into
	// by their in-group reward std, equal in count (RAGEN: 6).
	GradientBuckets int `yaml:"gradient_buckets"`
}

// RunConfig sets the size and length of the run.
type RunConfig struct {
	// Seed determines everything random in the run: levels, samples,
	// initialisation, shuffling.
	Seed uint64 `yaml:"seed"`
	// Steps is the number of RL steps.
	Steps int `yaml:"steps"`
	// Groups is the number of env groups (prompts) per step; GroupSize the
	// number of samples per group (RAGEN's 8 × 16 by default).
	Groups    int `yaml:"groups"`
	GroupSize int `yaml:"group_size"`
	// Out is the run directory (metrics, events, transcripts, checkpoints).
	// Left empty it is runs/<name of the config file> (runs/<env name> for
	// a config that does not come from a file). A directory belongs to one
	// run: see the README's "Run directories".
	Out string `yaml:"out"`
	// TrainSeedBase is the first training level seed (RAGEN: 10000).
	// Training levels are taken in order from it, each step the next
	// run.groups seeds (more with dynamic sampling), skipping every seed
	// whose layout is a validation layout.
	TrainSeedBase uint64 `yaml:"train_seed_base"`
	// TranscriptsEvery writes readable sample transcripts every N steps
	// (0: never).
	TranscriptsEvery int `yaml:"transcripts_every"`
	// NaNStopStreak stops the run after this many consecutive updates with
	// a non-finite loss or gradient (each such update is skipped).
	NaNStopStreak int `yaml:"nan_stop_streak"`
}

// EnvConfig names the environment and holds its own config mapping.
type EnvConfig struct {
	Name   string    `yaml:"name"`
	Config yaml.Node `yaml:"config"`
}

// ModelConfig sizes the embedded transformer and its tokenizer.
type ModelConfig struct {
	DModel  int `yaml:"d_model"`
	Layers  int `yaml:"layers"`
	Heads   int `yaml:"heads"`
	KVHeads int `yaml:"kv_heads"`
	DFF     int `yaml:"d_ff"`
	MaxSeq  int `yaml:"max_seq"`
	// VocabSize is the tokenizer's target size (BPE trained on expert
	// episodes of the environment).
	VocabSize int `yaml:"vocab_size"`
	// Init, when set, starts from this checkpoint directory instead of a
	// fresh (or warm-started) model, and skips the warm start: a native
	// checkpoint, or a Hugging Face model directory (Llama, Mistral or
	// Qwen2; see local.IsHFDir), trained in full with its own tokenizer
	// and chat template. The other model keys then do not apply, except
	// MaxSeq, which bounds a Hugging Face model's context, and LoRA.
	Init string `yaml:"init"`
	// LoRA, with a positive rank, trains low-rank adapters on the actor
	// (the starting model: model.init, the warm start or a fresh model)
	// instead of every weight.
	LoRA LoRAConfig `yaml:"lora"`
}

// LoRAConfig trains the actor's LoRA adapters (model/native's LoRA, as
// PEFT defines them) while its weights stay frozen. The critic, if any,
// trains in full.
type LoRAConfig struct {
	// Rank is the adapters' rank r; 0, the default, trains every weight
	// instead.
	Rank int `yaml:"rank"`
	// Alpha scales the adapters' output by alpha/rank (PEFT's lora_alpha).
	Alpha float64 `yaml:"alpha"`
	// Dropout is PEFT's lora_dropout; only 0 is supported.
	Dropout float64 `yaml:"dropout"`
	// Targets are the adapted projections by PEFT's module names: some of
	// q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj.
	Targets []string `yaml:"targets"`
}

// Enabled reports whether the run trains adapters.
func (c LoRAConfig) Enabled() bool { return c.Rank > 0 }

// Native returns the embedded model's architecture for a vocabulary of
// vocab ids.
func (m ModelConfig) Native(vocab int) native.Config {
	return native.Config{Vocab: vocab, DModel: m.DModel, Layers: m.Layers, Heads: m.Heads, KVHeads: m.KVHeads,
		DFF: m.DFF, MaxSeq: m.MaxSeq, TieEmbeddings: true}
}

// Native returns the adapters' configuration for the native model, their
// initialisation seeded by the run's seed.
func (c LoRAConfig) Native(runSeed uint64) native.LoRAConfig {
	// The critic's initialisation uses runSeed+1.
	return native.LoRAConfig{Rank: c.Rank, Alpha: c.Alpha, Dropout: c.Dropout, Targets: slices.Clone(c.Targets), Seed: runSeed + 2}
}

// AlgoConfig is the learner: a preset (PPO, DAPO, GRPO, DrGRPO) whose
// fields can be overridden one by one, plus optimisation settings.
type AlgoConfig struct {
	// Preset names the starting point; the inline fields below override it.
	PresetName   string `yaml:"preset"`
	algos.Preset `yaml:",inline"`

	LR          float64 `yaml:"lr"`
	CriticLR    float64 `yaml:"critic_lr"`
	WarmupSteps int     `yaml:"warmup_steps"`
	WeightDecay float64 `yaml:"weight_decay"`
	GradClip    float64 `yaml:"grad_clip"`
	Epochs      int     `yaml:"ppo_epochs"`
	// MiniBatch is the number of training sequences per optimizer step:
	// one sequence per trajectory, or one per turn with a history window.
	MiniBatch int `yaml:"ppo_mini_batch_size"`
	// RecomputeOldLogProb makes the learner recompute, before each update,
	// the log-probs of the sampled tokens under the weights that sampled
	// them (a forward pass without gradient), and use them as the old
	// log-probs of the importance ratio instead of those the sampler
	// reported (verl's recompute); the step then records the difference
	// between the two (mismatch/*). On by default with server.url, where
	// the sampler's log-probs come from other kernels; off, the sampler's
	// log-probs are the old log-probs.
	RecomputeOldLogProb bool `yaml:"recompute_old_log_prob"`
}

// FilterConfig is the SNR-aware rollout filter.
type FilterConfig struct {
	algos.FilterConfig `yaml:",inline"`
	// EmptyStopSteps stops the run after this many consecutive steps whose
	// batch was empty after filtering (RAGEN: 5).
	EmptyStopSteps int `yaml:"empty_stop_steps"`
	// VarianceEarlyStop turns on RAGEN's reward-variance early stop.
	VarianceEarlyStop bool `yaml:"variance_early_stop"`
	// DynamicSampling is DAPO's dynamic sampling: drop the groups whose
	// samples all scored the same and sample new groups to refill the batch
	// (at most MaxSampleRounds generation rounds per step). The filter
	// above still applies afterwards; set value 1 and include_zero true
	// for DAPO alone.
	DynamicSampling bool `yaml:"dynamic_sampling"`
	MaxSampleRounds int  `yaml:"max_sample_rounds"`
}

// CollapseConfig schedules the template-collapse (mutual information)
// metrics.
type CollapseConfig struct {
	// Every computes them at step 1 and then every N steps (0: never).
	Every int `yaml:"every"`
	// Samples is the number of (prompt, reasoning) pairs scored per scheme.
	Samples int `yaml:"samples"`
	// FirstTurn and Trajectory select the two sampling schemes.
	FirstTurn  bool `yaml:"first_turn"`
	Trajectory bool `yaml:"trajectory"`
	// Alarm classifies the reasoning regime at every collapse step
	// (algos.RegimeTracker, on the first-turn scheme, or the trajectory
	// scheme when first_turn is off) and logs every change with a sample
	// transcript.
	Alarm AlarmConfig `yaml:"alarm"`
}

// AlarmConfig is the collapse alarm.
type AlarmConfig struct {
	Enabled            bool `yaml:"enabled"`
	algos.RegimeConfig `yaml:",inline"`
	// StopOn lists the regimes that stop the run when entered (e.g.
	// [template_collapse]); empty: never stop.
	StopOn []string `yaml:"stop_on"`
}

// ValidationConfig evaluates on held-out levels.
type ValidationConfig struct {
	// Every validates before training and then every N steps (0: never).
	Every int `yaml:"every"`
	// Levels is the number of held-out levels, disjoint by layout from
	// every warm-start and training level (whether or not Every is 0, so
	// that turning validation off does not change the training levels).
	Levels int `yaml:"levels"`
	// SeedBase is where validation seeds start.
	SeedBase uint64 `yaml:"seed_base"`
	// Samples is the number of episodes played on each validation level
	// (an environment with few distinct levels, such as the bandit,
	// validates on all of them several times).
	Samples int `yaml:"samples"`
	// EnvConfig, when set, overrides keys of env.config for validation
	// only: for example the bandit's held-out name pairs (split: test).
	EnvConfig yaml.Node `yaml:"env_config"`
	// Temperature for validation sampling.
	Temperature float64 `yaml:"temperature"`
}

// WarmStartConfig is the supervised stage on expert demonstrations that
// gives the embedded policy a starting point.
type WarmStartConfig struct {
	Enabled bool `yaml:"enabled"`
	// Episodes is the number of demonstration episodes generated.
	Episodes int `yaml:"episodes"`
	// Perturb is the probability that a demonstrated action is replaced by
	// a random one, so the warm-started policy is clearly worse than the
	// expert and RL has something to learn.
	Perturb float64 `yaml:"perturb"`
	// Rationale is "brief" (the expert's terse form, a few tokens) or
	// "full" (its sentences). Brief keeps sequences short for the small
	// embedded model.
	Rationale string `yaml:"rationale"`
	// Steps is the number of supervised optimizer steps: the budget, so
	// the same config and seed give the same starting model on any machine.
	Steps int `yaml:"steps"`
	// MaxDuration, when positive, also stops the stage after this much
	// time, with a warning: the starting model then depends on the
	// machine's speed. A safety cap, off by default.
	MaxDuration time.Duration `yaml:"max_duration"`
	Batch       int           `yaml:"batch"`
	LR          float64       `yaml:"lr"`
	// CacheDir holds warm-started checkpoints keyed by the config that
	// produced them, so the stage runs once.
	CacheDir string `yaml:"cache_dir"`
	// EnvConfig, when set, overrides keys of env.config for the
	// demonstrations only: for example a deterministic lake
	// (success_rate: 1) for the warm start of runs on a slippery one, so
	// that runs on every slip rate start from the same model.
	EnvConfig yaml.Node `yaml:"env_config"`
}

// CheckpointConfig schedules checkpoints.
type CheckpointConfig struct {
	// Every saves every N steps (0: only at the end and on interrupt).
	Every int `yaml:"every"`
	// Resume continues from the run directory's latest checkpoint if there
	// is one.
	Resume bool `yaml:"resume"`
}

// Default returns the configuration every config file starts from: RAGEN's
// CoordSokoban task with RAGEN's 8 groups × 16 samples and an embedded
// model sized so that, on two CPU cores, the warm start takes about a
// minute and an RL step well under a second.
func Default() Config {
	ro := rollout.DefaultConfig()
	ro.PromptStyle = rollout.PromptCompact
	ro.HistoryWindow = 1
	ro.Sampling.MaxTokens = 48
	ro.Concurrency = 4
	return Config{
		Run: RunConfig{Seed: 1, Steps: 400, Groups: 8, GroupSize: 16,
			TrainSeedBase: 10000, TranscriptsEvery: 10, NaNStopStreak: 3},
		Env:     EnvConfig{Name: "sokoban"},
		Rollout: ro,
		Model: ModelConfig{DModel: 64, Layers: 2, Heads: 4, KVHeads: 4, DFF: 192, MaxSeq: 768, VocabSize: 512,
			LoRA: LoRAConfig{Rank: 0, Alpha: 16, Targets: native.LoRATargets()}},
		Algo: AlgoConfig{PresetName: "GRPO", Preset: algos.PresetGRPO(), LR: 5e-4, CriticLR: 5e-4, WarmupSteps: 0,
			WeightDecay: 0, GradClip: 1, Epochs: 1, MiniBatch: 64},
		Filter:   FilterConfig{FilterConfig: algos.RecommendedFilterConfig(), EmptyStopSteps: 5, MaxSampleRounds: 3},
		Analysis: AnalysisConfig{GradientEvery: 0, GradientBuckets: 6},
		Collapse: CollapseConfig{Every: 5, Samples: 64, FirstTurn: true, Trajectory: true,
			Alarm: AlarmConfig{Enabled: true, RegimeConfig: algos.DefaultRegimeConfig()}},
		Validation: ValidationConfig{Every: 10, Levels: 256, SeedBase: 1 << 40, Samples: 1, Temperature: 1},
		WarmStart: WarmStartConfig{Enabled: true, Episodes: 6000, Perturb: 0.1, Rationale: "brief",
			Steps: DefaultWarmStartSteps, Batch: 16, LR: 3e-3, CacheDir: "runs/cache"},
		Checkpoint: CheckpointConfig{Every: 10, Resume: true},
		Server:     ServerConfig{ProbeTolerance: 0.1, Outage: 15 * time.Minute},
		Tinker:     defaultTinker(),
	}
}

// DefaultWarmStartSteps is the default warm-start budget in optimizer
// steps, sized so that on two CPU cores the first RL step of the default
// run comes within three minutes of a fresh clone.
const DefaultWarmStartSteps = 6000

// Load reads a config file and applies `key=value` overrides (dotted keys,
// e.g. "algo.lr=3e-4" or "env.config.dim_x=8"). Without run.out, the run
// directory is runs/<file name without extension>.
func Load(path string, overrides []string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	cfg, err := parse(data, overrides, name)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Parse decodes a config document; see Load. Without run.out, the run
// directory is runs/<env.name>.
func Parse(data []byte, overrides []string) (Config, error) {
	return parse(data, overrides, "")
}

// parse decodes a config; runName names the default run directory (the
// environment's name when empty).
func parse(data []byte, overrides []string, runName string) (Config, error) {
	doc := &yaml.Node{Kind: yaml.DocumentNode}
	if len(bytes.TrimSpace(data)) > 0 {
		if err := yaml.Unmarshal(data, doc); err != nil {
			return Config{}, err
		}
	}
	if len(doc.Content) == 0 { // an empty file: every default
		doc.Content = []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}
	}
	for _, o := range overrides {
		key, value, err := yamlpath.ParseOverride(o)
		if err != nil {
			return Config{}, err
		}
		if err := yamlpath.Set(doc, key, value); err != nil {
			return Config{}, err
		}
	}
	cfg := Default()
	if n := yamlpath.Get(doc, "algo.preset"); n != nil {
		preset, err := algos.NewPreset(n.Value)
		if err != nil {
			return Config{}, fmt.Errorf("algo.preset: %w", err)
		}
		cfg.Algo.PresetName, cfg.Algo.Preset = n.Value, preset
	}
	if yamlpath.Get(doc, "warm_start.duration") != nil {
		return Config{}, errors.New("warm_start.duration: replaced by warm_start.steps (a number of optimizer steps, " +
			"so a config gives the same model on any machine) and the optional time cap warm_start.max_duration")
	}
	if err := yamlpath.DecodeStrict(doc, &cfg); err != nil {
		return Config{}, err
	}
	if cfg.Server.Enabled() && yamlpath.Get(doc, "algo.recompute_old_log_prob") == nil {
		cfg.Algo.RecomputeOldLogProb = true
	}
	if cfg.Run.Out == "" {
		if runName == "" {
			runName = cfg.Env.Name
		}
		cfg.Run.Out = filepath.Join("runs", runName)
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Validate checks every section and names the first offending key.
func (c *Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.Run.Steps >= 0 && int64(c.Run.Steps) < maxSeedStep, "run.steps: must be >= 0 and below %d, got %d", int64(maxSeedStep), c.Run.Steps)
	check(c.Learner == "" || c.Learner == LearnerTinker || !c.Tinker.Enabled(),
		"learner: %q does not run on a Tinker server; tinker.url applies to the tinker learner", c.Learner)
	errs = append(errs, finiteFloats(reflect.ValueOf(*c), "")...)
	errs = append(errs, c.sizeBounds()...)
	check(c.Run.Groups >= 1, "run.groups: must be at least 1, got %d", c.Run.Groups)
	check(c.Run.GroupSize >= 1, "run.group_size: must be at least 1, got %d", c.Run.GroupSize)
	check(c.Run.Out != "", "run.out: must name a directory")
	check(c.Run.NaNStopStreak >= 1, "run.nan_stop_streak: must be at least 1, got %d", c.Run.NaNStopStreak)
	check(c.Env.Name != "", "env.name: must name a registered environment")
	if err := c.Rollout.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("rollout.%w", err))
	}
	check(c.Model.DModel >= 8 && c.Model.Heads >= 1 && c.Model.DModel%c.Model.Heads == 0,
		"model.d_model: must be at least 8 and divisible by model.heads (got %d and %d)", c.Model.DModel, c.Model.Heads)
	check(c.Model.Layers >= 1, "model.layers: must be at least 1, got %d", c.Model.Layers)
	check(c.Model.DFF >= 1, "model.d_ff: must be at least 1, got %d", c.Model.DFF)
	check(c.Model.MaxSeq >= 64, "model.max_seq: must be at least 64, got %d", c.Model.MaxSeq)
	check(c.Model.VocabSize >= 267, "model.vocab_size: must be at least 267 (bytes and special tokens), got %d", c.Model.VocabSize)
	errs = append(errs, c.Model.LoRA.validate()...)
	if err := c.Algo.Preset.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("algo: %w", err))
	}
	check(c.Algo.LR > 0, "algo.lr: must be positive, got %v", c.Algo.LR)
	check(!(c.Algo.UseKLInReward && c.Rollout.HistoryWindow > 0 && !c.Algo.UsesTokenEstimator()),
		"algo.use_kl_in_reward: a per-token reward penalty needs a token estimator (gae or reinforce_plus_plus) "+
			"when rollout.history_window splits episodes into turns; set rollout.history_window=0 or algo.use_kl_loss instead")
	check(!c.Algo.UsesCritic() || c.Algo.CriticLR > 0, "algo.critic_lr: must be positive with a critic, got %v", c.Algo.CriticLR)
	check(c.Algo.GradClip >= 0, "algo.grad_clip: must be >= 0 (0 disables), got %v", c.Algo.GradClip)
	check(c.Algo.Epochs >= 1, "algo.ppo_epochs: must be at least 1, got %d", c.Algo.Epochs)
	check(c.Algo.MiniBatch >= 1, "algo.ppo_mini_batch_size: must be at least 1, got %d", c.Algo.MiniBatch)
	check(c.Algo.WarmupSteps >= 0, "algo.warmup_steps: must be >= 0, got %d", c.Algo.WarmupSteps)
	if _, err := algos.SelectGroups(c.Filter.FilterConfig, []float64{1}); err != nil {
		errs = append(errs, fmt.Errorf("filter: %w", err))
	}
	check(c.Filter.EmptyStopSteps >= 1, "filter.empty_stop_steps: must be at least 1, got %d", c.Filter.EmptyStopSteps)
	check(!c.Filter.DynamicSampling || (c.Filter.MaxSampleRounds >= 1 && c.Filter.MaxSampleRounds <= maxSeedRound),
		"filter.max_sample_rounds: must be between 1 and %d, got %d", maxSeedRound, c.Filter.MaxSampleRounds)
	check(c.Collapse.Every >= 0, "collapse.every: must be >= 0, got %d", c.Collapse.Every)
	check(c.Collapse.Samples >= 2, "collapse.samples: must be at least 2, got %d", c.Collapse.Samples)
	if c.Collapse.Alarm.Enabled {
		if err := c.Collapse.Alarm.RegimeConfig.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("collapse.alarm: %w", err))
		}
		for _, r := range c.Collapse.Alarm.StopOn {
			if _, err := algos.ParseRegime(r); err != nil {
				errs = append(errs, fmt.Errorf("collapse.alarm.stop_on: %w", err))
			}
		}
	}
	check(c.Validation.Every >= 0, "validation.every: must be >= 0, got %d", c.Validation.Every)
	check(c.Validation.Every == 0 || c.Validation.Levels >= 1, "validation.levels: must be at least 1, got %d", c.Validation.Levels)
	check(c.Validation.Temperature >= 0, "validation.temperature: must be >= 0, got %v", c.Validation.Temperature)
	check(c.Validation.Samples >= 1, "validation.samples: must be at least 1, got %d", c.Validation.Samples)
	if c.WarmStart.Enabled {
		check(c.WarmStart.Episodes >= 1, "warm_start.episodes: must be at least 1, got %d", c.WarmStart.Episodes)
		check(c.WarmStart.Perturb >= 0 && c.WarmStart.Perturb < 1, "warm_start.perturb: must be in [0, 1), got %v", c.WarmStart.Perturb)
		check(c.WarmStart.Steps >= 1, "warm_start.steps: must be at least 1, got %d", c.WarmStart.Steps)
		check(c.WarmStart.MaxDuration >= 0, "warm_start.max_duration: must be >= 0 (0: no time cap), got %v", c.WarmStart.MaxDuration)
		check(c.WarmStart.Rationale == "brief" || c.WarmStart.Rationale == "full", "warm_start.rationale: must be brief or full, got %q", c.WarmStart.Rationale)
		check(c.WarmStart.Batch >= 1, "warm_start.batch: must be at least 1, got %d", c.WarmStart.Batch)
		check(c.WarmStart.LR > 0, "warm_start.lr: must be positive, got %v", c.WarmStart.LR)
	}
	check(c.Checkpoint.Every >= 0, "checkpoint.every: must be >= 0, got %d", c.Checkpoint.Every)
	check(c.Analysis.GradientEvery >= 0, "analysis.gradient_every: must be >= 0 (0: never), got %d", c.Analysis.GradientEvery)
	check(c.Analysis.GradientBuckets >= 1, "analysis.gradient_buckets: must be at least 1, got %d", c.Analysis.GradientBuckets)
	errs = append(errs, c.validateServer()...)
	errs = append(errs, c.validateTinker()...)
	return errors.Join(errs...)
}

// validateServer checks the server section and what it needs of the
// others. Whether model.init is a Hugging Face directory is checked by
// New, which may read the file system.
func (c *Config) validateServer() []error {
	s := c.Server
	if !s.Enabled() {
		var errs []error
		for _, k := range []struct {
			key string
			set bool
		}{{"api_key", s.APIKey != ""}, {"model", s.Model != ""}, {"adapter_dir", s.AdapterDir != ""},
			{"adapter_dir_on_server", s.AdapterDirOnServer != ""}, {"keep_adapters", s.KeepAdapters}} {
			if k.set {
				errs = append(errs, fmt.Errorf("server.%s: only applies with server.url", k.key))
			}
		}
		return errs
	}
	var errs []error
	if s.Outage < 0 {
		errs = append(errs, fmt.Errorf("server.outage: must be >= 0, got %v", s.Outage))
	}
	if s.Outage >= c.Rollout.SampleTimeout {
		errs = append(errs, fmt.Errorf("server.outage (%v) must be shorter than rollout.sample_timeout (%v), which bounds a whole sampling call: raise rollout.sample_timeout", s.Outage, c.Rollout.SampleTimeout))
	}
	for _, raw := range strings.Split(s.URL, ",") {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("server.url: %q is not an http(s)://host[:port] base URL", strings.TrimSpace(raw)))
		}
	}
	if !c.Model.LoRA.Enabled() {
		errs = append(errs, errors.New("server.url: a served model trains LoRA adapters, which the server loads after every step: set model.lora.rank (e.g. 16, at most the server's --max-lora-rank)"))
	}
	if c.Model.Init == "" {
		errs = append(errs, errors.New("server.url: set model.init to the Hugging Face model directory the server serves (the learner trains the same model in process)"))
	}
	if !c.Algo.RecomputeOldLogProb {
		errs = append(errs, errors.New("algo.recompute_old_log_prob: must be true with server.url: the server's log-probs come from other kernels, so the learner recomputes the old log-probs of the ratio"))
	}
	return errs
}

// validate checks model.lora (with a positive rank; its other keys are
// ignored otherwise).
func (c LoRAConfig) validate() []error {
	if c.Rank < 0 {
		return []error{fmt.Errorf("model.lora.rank: must be >= 0 (0: train every weight), got %d", c.Rank)}
	}
	if !c.Enabled() {
		return nil
	}
	var errs []error
	if !(c.Alpha > 0) || math.IsInf(c.Alpha, 0) {
		errs = append(errs, fmt.Errorf("model.lora.alpha: must be positive, got %v", c.Alpha))
	}
	if c.Dropout != 0 {
		errs = append(errs, fmt.Errorf("model.lora.dropout: only 0 is supported, got %v", c.Dropout))
	}
	if len(c.Targets) == 0 {
		errs = append(errs, errors.New("model.lora.targets: name at least one module"))
	}
	for i, t := range c.Targets {
		switch {
		case !slices.Contains(native.LoRATargets(), t):
			errs = append(errs, fmt.Errorf("model.lora.targets: unknown module %q (want some of %s)", t, strings.Join(native.LoRATargets(), ", ")))
		case slices.Contains(c.Targets[:i], t):
			errs = append(errs, fmt.Errorf("model.lora.targets: %q is listed twice", t))
		}
	}
	return errs
}

// YAML renders the resolved configuration, as `-dry-run` prints it and as
// it is saved in the run directory.
func (c *Config) YAML() (string, error) {
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return b.String(), nil
}

// earlyStop returns the early-stop settings of the filter section.
func (c *Config) earlyStop() algos.EarlyStopConfig {
	e := algos.DefaultEarlyStopConfig()
	e.EmptyStopSteps = c.Filter.EmptyStopSteps
	if !c.Filter.VarianceEarlyStop {
		e.Patience = 0
	}
	return e
}

// NeedsReference reports whether any KL term needs the frozen reference
// policy.
func (c *Config) NeedsReference() bool { return c.Algo.UseKLLoss || c.Algo.UseKLInReward }

// Names of the learners and samplers the configuration can select.
const (
	// LearnerNative trains in this process (train/inprocess).
	LearnerNative = "native"
	// LearnerTinker trains on a Tinker API server (train/tinkerlearner).
	LearnerTinker = "tinker"
	// SamplerServed samples on a vLLM-compatible server that loads the
	// learner's LoRA adapters (train/served).
	SamplerServed = "served"
)

// LearnerName is the name of the learner that trains the run: the learner
// key, or by default "tinker" with tinker.url and "native" otherwise.
func (c *Config) LearnerName() string {
	switch {
	case c.Learner != "":
		return c.Learner
	case c.Tinker.Enabled():
		return LearnerTinker
	default:
		return LearnerNative
	}
}

// SamplerName is the name of the sampler the run's rollouts sample from:
// "served" with server.url, or "" for the learner's own policy.
func (c *Config) SamplerName() string {
	if c.Server.Enabled() {
		return SamplerServed
	}
	return ""
}

// finiteFloats checks that every float in v (a config struct, walked by
// its yaml keys) is a finite number: a NaN or infinite rate, coefficient
// or temperature decodes from YAML (.nan, .inf) but would poison a run.
func finiteFloats(v reflect.Value, prefix string) []error {
	var errs []error
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[yaml.Node]() {
			return nil // an environment's own section, which it checks
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "-" {
				continue
			}
			key := prefix
			if opts != "inline" {
				if name == "" {
					name = strings.ToLower(f.Name)
				}
				key = joinKey(prefix, name)
			}
			errs = append(errs, finiteFloats(v.Field(i), key)...)
		}
	case reflect.Float32, reflect.Float64:
		if x := v.Float(); math.IsNaN(x) || math.IsInf(x, 0) {
			errs = append(errs, fmt.Errorf("%s: must be a finite number, got %v", prefix, x))
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			errs = append(errs, finiteFloats(v.Index(i), fmt.Sprintf("%s.%d", prefix, i))...)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			errs = append(errs, finiteFloats(v.Elem(), prefix)...)
		}
	}
	return errs
}

func joinKey(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// sizeBounds are the upper bounds of the settings that size memory or
// time: past them a config would exhaust the machine (run.group_size 1e9)
// or never end, rather than fail.
func (c *Config) sizeBounds() []error {
	var errs []error
	for _, b := range []struct {
		key      string
		v, limit int
	}{
		{"run.groups", c.Run.Groups, 1 << 12},
		{"run.group_size", c.Run.GroupSize, 1 << 10},
		{"rollout.max_turns", c.Rollout.MaxTurns, 1 << 10},
		{"rollout.sampling.max_tokens", c.Rollout.Sampling.MaxTokens, 1 << 17},
		{"rollout.concurrency", c.Rollout.Concurrency, 1 << 12},
		{"model.d_model", c.Model.DModel, 1 << 14},
		{"model.layers", c.Model.Layers, 1 << 8},
		{"model.heads", c.Model.Heads, 1 << 8},
		{"model.d_ff", c.Model.DFF, 1 << 16},
		{"model.max_seq", c.Model.MaxSeq, 1 << 17},
		{"model.vocab_size", c.Model.VocabSize, 1 << 20},
		{"model.lora.rank", c.Model.LoRA.Rank, 1 << 12},
		{"algo.ppo_epochs", c.Algo.Epochs, 1 << 10},
		{"algo.ppo_mini_batch_size", c.Algo.MiniBatch, 1 << 16},
		{"collapse.samples", c.Collapse.Samples, 1 << 12},
		{"validation.levels", c.Validation.Levels, 1 << 17},
		{"validation.samples", c.Validation.Samples, 1 << 10},
		{"warm_start.episodes", c.WarmStart.Episodes, 1 << 20},
		{"warm_start.batch", c.WarmStart.Batch, 1 << 12},
		{"warm_start.steps", c.WarmStart.Steps, 1 << 24},
		{"analysis.gradient_buckets", c.Analysis.GradientBuckets, 1 << 10},
	} {
		if b.v > b.limit {
			errs = append(errs, fmt.Errorf("%s: %d is above the largest this build takes, %d", b.key, b.v, b.limit))
		}
	}
	return errs
}
