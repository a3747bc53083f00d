package train

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/policy/policytest"
	"github.com/agentrl/agentrl/rollout"
)

// scriptedLearner samples from a scripted policy and learns nothing: the
// loop's mechanics without a model.
type scriptedLearner struct {
	fakeLearner
	p *policytest.Scripted
}

func (l *scriptedLearner) Policy() policy.Policy { return l.p }

// scriptedOptions are unitOptions whose learner is a scriptedLearner over
// reply.
func scriptedOptions(reply func(prompt string, seed uint64) string) Options {
	o := unitOptions()
	o.Learner = func(context.Context, *Start) (Learner, error) {
		return &scriptedLearner{p: &policytest.Scripted{Reply: reply}}, nil
	}
	return o
}

func TestTrainingLevelsAvoidValidationLayouts(t *testing.T) {
	cfg, err := Parse([]byte("validation:\n  levels: 300\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(cfg, unitOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.buildValidationSet(); err != nil {
		t.Fatal(err)
	}
	if len(tr.valSeeds) != 300 || len(tr.valKeys) != 300 {
		t.Fatalf("%d validation seeds, %d distinct layouts; want 300 each", len(tr.valSeeds), len(tr.valKeys))
	}
	env, _ := tr.factory.New()
	for _, base := range []uint64{cfg.Run.TrainSeedBase, 1 << 32} { // training levels, and the warm start's
		seeds, next, err := tr.nextSeeds(base, 2000)
		if err != nil {
			t.Fatal(err)
		}
		skipped := int(next-base) - len(seeds)
		for _, s := range seeds {
			key, _ := env.Reset(s)
			if tr.valKeys[key] {
				t.Fatalf("seed %d reuses a validation layout", s)
			}
		}
		// The generator repeats itself: some seeds must have been skipped,
		// or the check above proves nothing.
		if skipped == 0 {
			t.Errorf("no seed from %d on shared a layout with the validation set; expected some", base)
		}
	}
}

func TestDynamicSamplingRefills(t *testing.T) {
	cfg, err := Parse([]byte("run:\n  groups: 2\n  group_size: 4\nvalidation:\n  levels: 4\nfilter:\n  dynamic_sampling: true\n  max_sample_rounds: 2\n"),
		[]string{"run.out=" + filepath.Join(t.TempDir(), "run")})
	if err != nil {
		t.Fatal(err)
	}
	// Replies that score differently by sample: Up or nothing valid.
	tr, err := New(cfg, scriptedOptions(func(_ string, seed uint64) string {
		return fmt.Sprintf("<think>%d</think><answer>%s</answer>", seed%3, []string{"Up", "Left", "x"}[seed%3])
	}))
	if err != nil {
		t.Fatal(err)
	}
	s, err := tr.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	// Group 0 all scored alike (dropped), group 1 varies (kept).
	var trajs []rollout.Trajectory
	for g, scores := range [][]float64{{1, 1, 1, 1}, {0, 1, 0, 2}} {
		for i, sc := range scores {
			trajs = append(trajs, rollout.Trajectory{Group: g, Sample: i, Seed: uint64(100 + g), Score: sc})
		}
	}
	m := metrics{}
	out, next, err := s.dynamicSampling(context.Background(), 1, newBatch(trajs), 5000, m)
	if err != nil {
		t.Fatal(err)
	}
	if m["rollout/dynamic_sampling_rounds"] != 2 || m["rollout/dynamic_sampling_dropped"] < 1 || next <= 5000 {
		t.Errorf("metrics %v, next seed %d", m, next)
	}
	if n := len(out.Trajectories); n%4 != 0 || n < 4 || n > 8 || len(out.Groups) != n/4 {
		t.Fatalf("%d trajectories in %d groups back", n, len(out.Groups))
	}
	for i := 0; i < 4; i++ {
		tr := out.Trajectories[out.Groups[0][i]]
		if tr.Seed != 101 || tr.Group != 0 || tr.Score != []float64{0, 1, 0, 2}[i] {
			t.Errorf("trajectory %d = group %d seed %d score %v; want the varied group first, renumbered 0", i, tr.Group, tr.Seed, tr.Score)
		}
	}
	for _, i := range slices.Concat(out.Groups[1:]...) {
		if tr := out.Trajectories[i]; tr.Group != 1 || tr.Seed < 5000 {
			t.Errorf("refill trajectory %d: group %d seed %d", i, tr.Group, tr.Seed)
		}
	}
}
