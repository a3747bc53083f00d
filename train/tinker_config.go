package train

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/agentrl/agentrl/algos"
)

// TinkerLocal is tinker.url's value for an offline Tinker server that the
// run starts in its own process on the starting model, reached over
// loopback HTTP like any other.
const TinkerLocal = "local"

// Tinker loss routes (tinker.loss).
const (
	// TinkerLossLinearised evaluates agentrl's loss in Go from a forward
	// pass's log-probs and sends its per-token gradient as cross_entropy
	// weights: exact for every objective of package algos (the entropy
	// bonus through its score-function estimate; see tinkerLearner).
	TinkerLossLinearised = "linearised"
	// TinkerLossPPO uses the server's built-in ppo loss, one round trip
	// fewer per mini-batch; allowed only when it is the preset's objective
	// exactly (clipped ratio, no dual clip, KL loss or entropy bonus).
	TinkerLossPPO = "ppo"
)

// TinkerConfig trains the policy on a Tinker API server: the hosted
// Tinker service, SkyRL's self-hosted server, `trainer serve`'s Tinker
// routes, or (url: local) an offline server in this process. The server
// owns the weights and the optimizer and samples the rollouts; the run
// keeps environments, rollouts, filtering, advantages, the loss and the
// diagnostics (docs/tinker.md). None of these keys is part of the run
// identity apart from what the model is: they say where the learner runs.
type TinkerConfig struct {
	// URL is the server's base URL (http://host:8000; a trailing /api/v1
	// is accepted), or "local". Empty (the default): the in-process
	// learner.
	URL string `yaml:"url"`
	// APIKey authenticates with the server; empty means $TINKER_API_KEY.
	// It is never written to the run directory.
	APIKey string `yaml:"api_key"`
	// BaseModel names the server's base model (e.g. Qwen/Qwen3-8B); empty
	// means the first model the server lists.
	BaseModel string `yaml:"base_model"`
	// Loss is the loss route: linearised (the default) or ppo.
	Loss string `yaml:"loss"`
	// ProbeTolerance is the largest mean |Δ log-prob| allowed, at start,
	// between the server's base model and the run's starting model scoring
	// a probe conversation: above it the server serves another model. The
	// offline server computes with the same float32 kernels (differences
	// ~1e-7); GPU engines in bf16 differ by ~1e-2. Negative skips it.
	ProbeTolerance float64 `yaml:"probe_tolerance"`
	// FutureTimeoutS bounds the wait for one server result, in seconds
	// (default 1800).
	FutureTimeoutS float64 `yaml:"future_timeout_s"`
	// Outage is how long, after a step failed, the run waits for a server
	// that stopped answering; a server that comes back without the run's
	// model (it restarted) has the run resume from its last checkpoint in
	// the same process (default 15m).
	Outage time.Duration `yaml:"outage"`
}

// Enabled reports whether the learner runs on a Tinker server.
func (c TinkerConfig) Enabled() bool { return strings.TrimSpace(c.URL) != "" }

// Local reports whether the run starts its own offline Tinker server.
func (c TinkerConfig) Local() bool { return strings.TrimSpace(c.URL) == TinkerLocal }

// defaultTinker is the tinker section's defaults.
func defaultTinker() TinkerConfig {
	return TinkerConfig{Loss: TinkerLossLinearised, ProbeTolerance: 1e-3, FutureTimeoutS: 1800, Outage: 15 * time.Minute}
}

// validateTinker checks the tinker section and what it needs of the others.
func (c *Config) validateTinker() []error {
	t := c.Tinker
	if !t.Enabled() {
		var errs []error
		for _, k := range []struct {
			key string
			set bool
		}{{"api_key", t.APIKey != ""}, {"base_model", t.BaseModel != ""}} {
			if k.set {
				errs = append(errs, fmt.Errorf("tinker.%s: only applies with tinker.url", k.key))
			}
		}
		return errs
	}
	var errs []error
	if t.Local() && t.BaseModel != "" {
		errs = append(errs, errors.New("tinker.base_model: with tinker.url local the offline server serves the run's starting model; leave it unset"))
	}
	if !t.Local() {
		u, err := url.Parse(strings.TrimSpace(t.URL))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("tinker.url: %q is not an http(s)://host[:port] base URL or %q", t.URL, TinkerLocal))
		}
	}
	if t.Loss != TinkerLossLinearised && t.Loss != TinkerLossPPO {
		errs = append(errs, fmt.Errorf("tinker.loss: must be %s or %s, got %q", TinkerLossLinearised, TinkerLossPPO, t.Loss))
	}
	if t.Loss == TinkerLossPPO {
		if err := c.Algo.tinkerPPOMatches(); err != nil {
			errs = append(errs, fmt.Errorf("tinker.loss: ppo: %w; use %s", err, TinkerLossLinearised))
		}
	}
	if t.Outage < 0 {
		errs = append(errs, fmt.Errorf("tinker.outage: must be >= 0, got %v", t.Outage))
	}
	if t.FutureTimeoutS <= 0 {
		errs = append(errs, fmt.Errorf("tinker.future_timeout_s: must be positive, got %v", t.FutureTimeoutS))
	}
	if c.Algo.UsesCritic() {
		errs = append(errs, errors.New("tinker.url: a Tinker server trains the policy alone, and the estimator needs a critic (algo.estimator gae): use a critic-free estimator such as grpo"))
	}
	if c.Server.Enabled() {
		errs = append(errs, errors.New("tinker.url and server.url: choose one; with tinker.url the Tinker server samples the rollouts too"))
	}
	if c.Analysis.GradientEvery > 0 {
		errs = append(errs, errors.New("analysis.gradient_every: the gradient analysis needs the model in process; set it to 0 with tinker.url"))
	}
	return errs
}

// tinkerPPOMatches reports why the server's built-in ppo loss is not the
// preset's objective, or nil when it is: the clipped ratio alone, whose
// per-token losses the mini-batch's aggregation weights scale (sent as
// scaled advantages, which min(r·A, clip(r)·A) commutes with).
func (a AlgoConfig) tinkerPPOMatches() error {
	switch {
	case a.ClipRatioC > 0:
		return fmt.Errorf("algo.clip_ratio_c %v (dual clip) is not in the server's ppo", a.ClipRatioC)
	case a.UseKLLoss:
		return errors.New("algo.use_kl_loss adds a KL term the server's ppo does not compute")
	case a.EntropyCoeff != 0:
		return fmt.Errorf("algo.entropy_coeff %v adds an entropy bonus the server's ppo does not compute", a.EntropyCoeff)
	case a.PolicyLoss != "" && a.PolicyLoss != algos.PolicyLossPPO:
		return fmt.Errorf("algo.policy_loss %s is not the server's ppo", a.PolicyLoss)
	case a.RolloutIS:
		return errors.New("algo.rollout_is weights the loss per token, which the server's ppo does not")
	}
	return nil
}
