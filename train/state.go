package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/agentrl/agentrl/policy/native"
)

// Files inside a run checkpoint besides the actor's own.
const (
	stateFile    = "trainer_state.json"
	criticDir    = "critic"
	referenceDir = "reference"
)

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

// checkpoint saves the actor (weights, optimizer, tokenizer, trainer
// state) and the critic under run.out/checkpoints/latest, atomically.
func (s *session) checkpoint() error {
	state, err := json.MarshalIndent(jsonState{State: s.state, RandomValSuccess: nanToNil(s.state.RandomValSuccess),
		WarmStartValSuccess: nanToNil(s.state.WarmStartValSuccess)}, "", "  ")
	if err != nil {
		return err
	}
	tok, err := tokenizerJSON(s.tok)
	if err != nil {
		return err
	}
	dir := filepath.Join(s.cfg.Run.Out, checkpointsDir, latestCheckpoint)
	// The critic is written first: a crash between the two saves leaves a
	// critic newer than the actor's state, which resume detects by step.
	if s.learn.critic != nil {
		cstate, _ := json.Marshal(map[string]int{"step": s.state.Step})
		if err := native.SaveCheckpoint(filepath.Join(s.cfg.Run.Out, checkpointsDir, criticDir), s.learn.critic, s.learn.criticOpt,
			map[string][]byte{stateFile: cstate}); err != nil {
			return fmt.Errorf("checkpoint critic: %w", err)
		}
	}
	if s.learn.ref != nil {
		refDir := filepath.Join(s.cfg.Run.Out, checkpointsDir, referenceDir)
		if _, err := os.Stat(refDir); errors.Is(err, fs.ErrNotExist) {
			// The reference never changes: written once.
			if err := native.SaveCheckpoint(refDir, s.learn.ref, nil, nil); err != nil {
				return fmt.Errorf("checkpoint reference: %w", err)
			}
		}
	}
	if err := native.SaveCheckpoint(dir, s.actor, s.learn.actorOpt, map[string][]byte{tokenizerFile: tok, stateFile: state}); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// loadReference loads the frozen KL reference saved with the run.
func (s *session) loadReference() (*native.Model, error) {
	dir := filepath.Join(s.cfg.Run.Out, checkpointsDir, referenceDir)
	ck, err := native.LoadCheckpoint(dir)
	if err != nil {
		return nil, fmt.Errorf("resume: the KL reference policy: %w", err)
	}
	return ck.Model, nil
}

// resume loads run.out/checkpoints/latest if it exists. It reports whether
// it did.
func (s *session) resume() (bool, error) {
	dir := filepath.Join(s.cfg.Run.Out, checkpointsDir, latestCheckpoint)
	ck, err := native.LoadCheckpoint(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("resume from %s: %w", dir, err)
	}
	if ck.Optimizer == nil {
		return false, fmt.Errorf("resume from %s: no optimizer state", dir)
	}
	tok, err := tokenizerFromExtra(ck.Extra)
	if err != nil {
		return false, fmt.Errorf("resume from %s: %w", dir, err)
	}
	var js jsonState
	if err := json.Unmarshal(ck.Extra[stateFile], &js); err != nil {
		return false, fmt.Errorf("resume from %s: %s: %w", dir, stateFile, err)
	}
	state := js.State
	state.RandomValSuccess, state.WarmStartValSuccess = nilToNaN(js.RandomValSuccess), nilToNaN(js.WarmStartValSuccess)
	if state.EarlyStop == nil || state.CollapseEMA == nil {
		return false, fmt.Errorf("resume from %s: %s is incomplete", dir, stateFile)
	}
	if want := s.modelConfig(tok.VocabSize(), false); ck.Model.Config().DModel != want.DModel || ck.Model.Config().Layers != want.Layers {
		return false, fmt.Errorf("resume from %s: the checkpoint's model (%+v) does not match the config's model section", dir, ck.Model.Config())
	}
	ck.Optimizer.WeightDecay = float32(s.cfg.Algo.WeightDecay)
	s.tok, s.actor, s.state = tok, ck.Model, state
	s.learn = &learner{actorOpt: ck.Optimizer}
	if s.cfg.Algo.UsesCritic() {
		cdir := filepath.Join(s.cfg.Run.Out, checkpointsDir, criticDir)
		cck, err := native.LoadCheckpoint(cdir)
		if err != nil {
			return false, fmt.Errorf("resume critic from %s: %w", cdir, err)
		}
		var cs struct{ Step int }
		if err := json.Unmarshal(cck.Extra[stateFile], &cs); err != nil || cs.Step != state.Step {
			return false, fmt.Errorf("resume: critic checkpoint (step %d) does not match the actor's (step %d)", cs.Step, state.Step)
		}
		s.learn.critic, s.learn.criticOpt = cck.Model, cck.Optimizer
	}
	s.log.Info("resumed", "dir", dir, "step", state.Step)
	return true, nil
}
