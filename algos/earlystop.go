package algos

import (
	"fmt"
	"math"
)

// Early stopping on filter outcomes, as RAGEN's trainer does it
// (agent_trainer.fit):
//
// Empty-after-filter streak: every step whose filter kept nothing is skipped
// and increments a counter; a non-empty step resets it. Training stops when
// the counter reaches EmptyStopSteps (default 5; ≤ 0 disables).
//
// Reward-variance collapse: on non-empty steps only, with v =
// rollout/in_group_reward_std (mean unbiased in-group std over all groups,
// before filtering):
//
//	baseline = mean of v over the first WarmupSteps (10) non-empty steps
//	then stop once Patience (10) consecutive non-empty steps all have v < Ratio (0.1)·baseline
//
// The step that completes the baseline is not itself tested, and empty steps
// neither extend nor break the streak (RAGEN keeps a window of the last 10
// non-empty values).
//
// The settings (EarlyStopConfig) and the counters (EarlyStop) are separate:
// a resumed run takes its settings from its configuration and only the
// counters from the checkpoint, so the counters' JSON holds no settings.

// Early-stop reasons; RAGEN logs them as early_stopped/<reason>.
const (
	StopEmptyFiltered  = "empty_filtered_steps"
	StopRewardVariance = "reward_variance_collapse"
)

// EarlyStopConfig holds the early stops' settings.
type EarlyStopConfig struct {
	EmptyStopSteps int     // stop after this many consecutive empty steps; ≤ 0 disables
	WarmupSteps    int     // non-empty steps averaged into the baseline
	Patience       int     // consecutive low steps that stop the run; ≤ 0 disables
	Ratio          float64 // "low" means below Ratio·baseline
}

// DefaultEarlyStopConfig returns RAGEN's settings: 5 empty steps, baseline
// over 10 steps, 10 steps below 0.1 × baseline.
func DefaultEarlyStopConfig() EarlyStopConfig {
	return EarlyStopConfig{EmptyStopSteps: 5, WarmupSteps: 10, Patience: 10, Ratio: 0.1}
}

// EarlyStop is the state of the two filter-driven early stops. Its exported
// fields round-trip through JSON for checkpoints; Config is not saved.
type EarlyStop struct {
	Config EarlyStopConfig `json:"-"`

	ConsecutiveEmpty int       `json:"consecutive_empty"`
	WarmupValues     []float64 `json:"warmup_values"`
	Baseline         float64   `json:"baseline"`
	HasBaseline      bool      `json:"has_baseline"`
	LowStreak        int       `json:"low_streak"`
	Stopped          bool      `json:"stopped"`
	Reason           string    `json:"reason"`
}

// NewEarlyStop returns a tracker with the given settings and no history.
func NewEarlyStop(cfg EarlyStopConfig) *EarlyStop {
	return &EarlyStop{Config: cfg}
}

// Observe records one training step: whether the filter left it empty and its
// rollout/in_group_reward_std. It returns the stop reason ("" to go on). Once
// stopped, the tracker keeps returning the same reason.
func (e *EarlyStop) Observe(empty bool, inGroupRewardStd float64) (string, error) {
	if math.IsNaN(inGroupRewardStd) || math.IsInf(inGroupRewardStd, 0) {
		return "", fmt.Errorf("algos: in-group reward std is %v", inGroupRewardStd)
	}
	if e.Stopped {
		return e.Reason, nil
	}
	if empty {
		e.ConsecutiveEmpty++
		if e.Config.EmptyStopSteps > 0 && e.ConsecutiveEmpty >= e.Config.EmptyStopSteps {
			e.Stopped, e.Reason = true, StopEmptyFiltered
		}
		return e.Reason, nil
	}
	e.ConsecutiveEmpty = 0
	if !e.HasBaseline {
		e.WarmupValues = append(e.WarmupValues, inGroupRewardStd)
		if len(e.WarmupValues) >= max(e.Config.WarmupSteps, 1) {
			e.Baseline, e.HasBaseline = mean(e.WarmupValues), true
			e.LowStreak = 0
		}
		return "", nil
	}
	if inGroupRewardStd < e.Config.Ratio*e.Baseline {
		e.LowStreak++
	} else {
		e.LowStreak = 0
	}
	if e.Config.Patience > 0 && e.LowStreak >= e.Config.Patience {
		e.Stopped, e.Reason = true, StopRewardVariance
	}
	return e.Reason, nil
}

// ObserveFilter is Observe with a FilterResult.
func (e *EarlyStop) ObserveFilter(r FilterResult) (string, error) {
	return e.Observe(r.Empty, r.MeanInGroupStd())
}

// Metrics returns rollout/consecutive_empty_after_filter_steps and, once
// stopped, early_stopped/<reason> = 1.
func (e *EarlyStop) Metrics() map[string]float64 {
	m := map[string]float64{"rollout/consecutive_empty_after_filter_steps": float64(e.ConsecutiveEmpty)}
	if e.Stopped {
		m["early_stopped/"+e.Reason] = 1
	}
	return m
}
