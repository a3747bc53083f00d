package train

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentrl/agentrl/algos"
	"github.com/agentrl/agentrl/internal/atomicdir"
)

// stateFile is the trainer's state inside a checkpoint, beside the
// learner's files; pendingFile the steps sampled ahead of it
// (rollout.staleness ≥ 1), which the weights of the checkpoint's step
// cannot sample again.
const (
	stateFile   = "trainer_state.json"
	pendingFile = "pending.gob"
)

// encodePending is the pendingFile of steps sampled ahead.
func encodePending(steps []collected) ([]byte, error) {
	out := make([]pendingStep, len(steps))
	for i, c := range steps {
		out[i] = pendingStep{Step: c.step, Version: c.version, Trajectories: c.batch.Trajectories, Groups: c.batch.Groups,
			Sampled: c.sampled, NextSeed: c.nextSeed, Metrics: c.m}
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(out); err != nil {
		return nil, fmt.Errorf("the steps sampled ahead: %w", err)
	}
	return b.Bytes(), nil
}

// loadPending reads the steps a checkpoint at step had sampled ahead;
// none when it has no pendingFile.
func loadPending(dir string, step int) ([]collected, error) {
	raw, err := os.ReadFile(filepath.Join(dir, pendingFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var steps []pendingStep
	if err := gob.NewDecoder(bytes.NewReader(raw)).Decode(&steps); err != nil {
		return nil, fmt.Errorf("%s: %w", pendingFile, err)
	}
	out := make([]collected, len(steps))
	for i, p := range steps {
		if p.Step != step+1+i {
			return nil, fmt.Errorf("%s: holds step %d where step %d belongs", pendingFile, p.Step, step+1+i)
		}
		out[i] = collected{step: p.Step, version: p.Version, batch: Batch{Trajectories: p.Trajectories, Groups: p.Groups},
			sampled: p.Sampled, nextSeed: p.NextSeed, m: p.Metrics}
	}
	return out, nil
}

// State is what a checkpoint adds to the learner's state to resume a run
// exactly where it stopped: counters and measured baselines, never
// settings (those come from the configuration on every start).
type State struct {
	Step          int                `json:"step"`
	NextTrainSeed uint64             `json:"next_train_seed"`
	EarlyStop     *algos.EarlyStop   `json:"early_stop"`
	CollapseEMA   *algos.CollapseEMA `json:"collapse_ema"`
	// Regime is the collapse alarm's classifier (nil in checkpoints from
	// before it existed: it starts afresh).
	Regime    *algos.RegimeTracker `json:"regime,omitempty"`
	NaNStreak int                  `json:"nan_streak"`
	// RandomValSuccess is the validation success of a uniformly random
	// policy, measured once.
	RandomValSuccess float64 `json:"random_val_success"`
	// WarmStartValSuccess is the validation success before any RL step.
	WarmStartValSuccess float64 `json:"warm_start_val_success"`
	// Stopped says why the run ended early, if it did.
	Stopped string `json:"stopped,omitempty"`
	// ElapsedS is the wall time of the sessions that produced this
	// checkpoint (a resumed run's summary reports the total, not only its
	// last session's); WarmStartS the part of it the warm start took.
	ElapsedS   float64 `json:"elapsed_s"`
	WarmStartS float64 `json:"warm_start_s"`
	// Arithmetic is the learner's ArithmeticID on the build that wrote the
	// checkpoint (empty when the learner reports none, and in checkpoints
	// from before it was recorded).
	Arithmetic string `json:"arithmetic,omitempty"`
}

// observeUpdate counts the steps in a row whose update skipped
// mini-batches for non-finite losses or gradients, and stops the run after
// stopStreak of them. It reports whether this step's update skipped any.
func (st *State) observeUpdate(u UpdateStats, stopStreak int) bool {
	if u.Skipped == 0 {
		st.NaNStreak = 0
		return false
	}
	st.NaNStreak++
	if st.NaNStreak >= stopStreak {
		st.Stopped = fmt.Sprintf("%d consecutive steps with non-finite losses", st.NaNStreak)
	}
	return true
}

// clone returns a copy of st that shares nothing with it: a step works on
// the clone, and the run's state becomes the clone only when the step
// completes.
func (st State) clone() State {
	c := st
	if st.EarlyStop != nil {
		e := *st.EarlyStop
		e.WarmupValues = slices.Clone(st.EarlyStop.WarmupValues)
		c.EarlyStop = &e
	}
	if st.CollapseEMA != nil {
		e := *st.CollapseEMA
		e.Std, e.StdSeq = maps.Clone(st.CollapseEMA.Std), maps.Clone(st.CollapseEMA.StdSeq)
		c.CollapseEMA = &e
	}
	if st.Regime != nil {
		r := *st.Regime
		c.Regime = &r
	}
	return c
}

// jsonState is State with NaN-safe floats (JSON has no NaN).
type jsonState struct {
	State
	RandomValSuccess    *float64 `json:"random_val_success"`
	WarmStartValSuccess *float64 `json:"warm_start_val_success"`
}

func nanToNil(x float64) *float64 {
	if math.IsNaN(x) {
		return nil
	}
	return &x
}

func nilToNaN(x *float64) float64 {
	if x == nil {
		return math.NaN()
	}
	return *x
}

// newState is the state of a run before its first step.
func (t *Trainer) newState() State {
	return State{NextTrainSeed: t.cfg.Run.TrainSeedBase,
		EarlyStop:        algos.NewEarlyStop(t.cfg.earlyStop()),
		CollapseEMA:      algos.NewCollapseEMA(),
		Regime:           &algos.RegimeTracker{Config: t.cfg.Collapse.Alarm.RegimeConfig},
		RandomValSuccess: math.NaN(), WarmStartValSuccess: math.NaN()}
}

// checkpoint saves the learner, the trainer state and the run identity as
// run.out/checkpoints/latest, replacing the previous checkpoint atomically:
// a crash at any instant leaves one complete checkpoint or the other.
func (s *session) checkpoint(ctx context.Context) error {
	s.state.ElapsedS = s.elapsed().Seconds()
	if a, ok := s.learner.(ArithmeticReporter); ok {
		s.state.Arithmetic = a.ArithmeticID()
	}
	state, err := encodeState(s.state)
	if err != nil {
		return err
	}
	id, err := json.MarshalIndent(s.identity, "", "  ")
	if err != nil {
		return err
	}
	var pending []byte
	if s.ahead != nil {
		steps, err := s.ahead.pending(ctx, s.state.Step)
		if err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		if pending, err = encodePending(steps); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
	}
	dir := filepath.Join(s.cfg.Run.Out, checkpointsDir, latestCheckpoint)
	err = atomicdir.Write(dir, func(tmp string) error {
		if err := s.learner.Save(ctx, tmp); err != nil {
			return err
		}
		if err := atomicdir.WriteFile(filepath.Join(tmp, stateFile), state, 0o644); err != nil {
			return err
		}
		if pending != nil {
			if err := atomicdir.WriteFile(filepath.Join(tmp, pendingFile), pending, 0o644); err != nil {
				return err
			}
		}
		return atomicdir.WriteFile(filepath.Join(tmp, identityFile), id, 0o644)
	})
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// elapsed is the run's wall time so far: the earlier sessions' (up to the
// checkpoint this one resumed) and this session's.
func (s *session) elapsed() time.Duration {
	return s.priorElapsed + s.now().Sub(s.started)
}

// encodeState is the JSON of a checkpoint's trainer state.
func encodeState(st State) ([]byte, error) {
	return json.MarshalIndent(jsonState{State: st, RandomValSuccess: nanToNil(st.RandomValSuccess),
		WarmStartValSuccess: nanToNil(st.WarmStartValSuccess)}, "", "  ")
}

// loadState reads the trainer state of a checkpoint and gives it this
// run's settings.
func (t *Trainer) loadState(dir string) (State, error) {
	raw, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return State{}, err
	}
	return t.decodeState(raw)
}

// decodeState reads encodeState's JSON and gives the state this run's
// settings.
func (t *Trainer) decodeState(raw []byte) (State, error) {
	var js jsonState
	if err := json.Unmarshal(raw, &js); err != nil {
		return State{}, fmt.Errorf("%s: %w", stateFile, err)
	}
	state := js.State
	state.RandomValSuccess, state.WarmStartValSuccess = nilToNaN(js.RandomValSuccess), nilToNaN(js.WarmStartValSuccess)
	if state.EarlyStop == nil || state.CollapseEMA == nil {
		return State{}, fmt.Errorf("%s is incomplete", stateFile)
	}
	state.EarlyStop.Config = t.cfg.earlyStop()
	state.CollapseEMA.Decay = algos.CollapseEMADecay
	if state.Regime == nil {
		state.Regime = &algos.RegimeTracker{}
	}
	state.Regime.Config = t.cfg.Collapse.Alarm.RegimeConfig
	return state, nil
}

// checkArithmetic warns when the checkpoint being resumed was written by a
// build whose arithmetic differs from this one's (the learner's
// ArithmeticID): the run goes on correctly, but no longer on the bits of
// an uninterrupted run.
func (t *Trainer) checkArithmetic(l Learner, written string) {
	a, ok := l.(ArithmeticReporter)
	if !ok {
		return
	}
	cur := a.ArithmeticID()
	if cur == "" || written == "" || written == cur {
		return
	}
	t.log.Warn("resuming with different arithmetic: this build's kernels round differently from the one that wrote the checkpoint, "+
		"so the run continues correctly but will not reproduce an uninterrupted run's numbers", "checkpoint", written, "build", cur)
}
