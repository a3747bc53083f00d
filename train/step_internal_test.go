package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
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
	out, next, err := s.dynamicSampling(context.Background(), s.engine, 1, 0, newBatch(trajs), 5000, m)
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

// failingEnv fails every Step on odd seeds, as an environment server that
// keeps answering 5xx would; even seeds end in one step.
type failingEnv struct{ seed uint64 }

type failingConfig struct{}

func init() {
	envs.MustRegister("train-failing", envs.Registration[failingConfig]{
		Default: func() failingConfig { return failingConfig{} },
		New:     func(failingConfig) (envs.Env, error) { return &failingEnv{}, nil },
	})
}

func (e *failingEnv) Reset(seed uint64) (string, error) { e.seed = seed; return e.Render(), nil }
func (e *failingEnv) Render() string                    { return fmt.Sprintf("level %d", e.seed) }
func (e *failingEnv) Instruction() string               { return "Say Go." }
func (e *failingEnv) Actions() []string                 { return []string{"Go"} }
func (e *failingEnv) Step(string) (envs.StepResult, error) {
	if e.seed%2 == 1 {
		return envs.StepResult{}, errors.New("env server: HTTP 503")
	}
	return envs.StepResult{Observation: "done", Reward: 1, Done: true, Info: envs.Info{Success: true, ActionValid: true}}, nil
}

// TestFailingEnvironmentsDropTheirGroups: an environment call that keeps
// failing past rollout.env_retries fails its episode; the trainer drops
// the episode's whole group (never scoring it 0, which would bias the
// advantages), counts it per step, and the summary counts the run's.
func TestFailingEnvironmentsDropTheirGroups(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	cfg, err := Parse([]byte("env: {name: train-failing}\nrun: {steps: 2, groups: 4, group_size: 2}\n"+
		"validation: {every: 0, levels: 4}\ncollapse: {every: 0}\nwarm_start: {enabled: false}\n"+
		"rollout: {env_retries: 1, env_retry_delay: 1ms}\n"), []string{"run.out=" + out})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(cfg, scriptedOptions(func(string, uint64) string { return "x</think><answer>Go</answer>" }))
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadMetrics(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		// Half the levels are odd seeds: 2 of 4 groups fail, each episode
		// after its one retry.
		if r["rollout/failed_groups"] != 2 || r["train/failed"] != 4 || r["train/env_retries"] != 4 {
			t.Errorf("step %v: failed groups %v, failed episodes %v, retries %v", r["step"], r["rollout/failed_groups"], r["train/failed"], r["train/env_retries"])
		}
	}
	raw, err := os.ReadFile(filepath.Join(out, summaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var sum Summary
	if err := json.Unmarshal(raw, &sum); err != nil || sum.FailedGroups != 4 {
		t.Errorf("summary.json failed_groups %d (%v): want 4", sum.FailedGroups, err)
	}
}

// TestTranscriptsRecordTokenIDs: beside each transcript, the token ids of
// its episodes turn by turn (each prompt's new ids, then the reply) add
// up to exactly the tokens the step trained on.
func TestTranscriptsRecordTokenIDs(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	cfg, err := Parse([]byte("run: {steps: 2, groups: 4, group_size: 2, transcripts_every: 1}\nvalidation: {every: 0, levels: 4}\n"+
		"collapse: {every: 1, samples: 8}\nwarm_start: {enabled: false}\nrollout: {max_turns: 3}\nfilter: {value: 1, include_zero: true}\n"),
		[]string{"run.out=" + out})
	if err != nil {
		t.Fatal(err)
	}
	var played []rollout.Trajectory
	testHookTrajectories = func(label string, step int, trajs []rollout.Trajectory) {
		if label == "train" && step == 2 {
			played = slices.Clone(trajs)
		}
	}
	defer func() { testHookTrajectories = nil }()
	tr, err := New(cfg, scriptedOptions(func(_ string, seed uint64) string {
		return fmt.Sprintf("<think>%d</think><answer>%s</answer>", seed%2, []string{"Up", "Left"}[seed%2])
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(out, transcriptsDir, tokensName("train", 2)))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != min(4, len(played)) { // transcripts show the first 4
		t.Fatalf("%d token records for %d episodes", len(lines), len(played))
	}
	for i, line := range lines {
		var rec tokenRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		var all []int
		for _, turn := range rec.Turns {
			all = append(append(all, turn.Prompt...), turn.Reply...)
		}
		all = append(all, rec.Tail...)
		if want := played[i].Tokens; !slices.Equal(all, want) || len(rec.Turns) != len(played[i].Turns) || rec.Drift == nil || *rec.Drift != 0 {
			t.Errorf("episode %d: the token record does not add up to the %d tokens played (%d turns, drift %v)", i, len(want), len(rec.Turns), rec.Drift)
		}
		// Every group is kept here: each reply token has its sampler
		// log-prob, advantage and old log-prob.
		for k, turn := range rec.Turns {
			if !rec.Kept || len(turn.LogProbs) != len(turn.Reply) || len(turn.Advantage) != len(turn.Reply) || len(turn.OldLogProb) != len(turn.Reply) {
				t.Errorf("episode %d turn %d: kept %v, %d reply tokens with %d log-probs, %d advantages, %d old log-probs", i, k, rec.Kept,
					len(turn.Reply), len(turn.LogProbs), len(turn.Advantage), len(turn.OldLogProb))
			}
		}
	}
	// The collapse readings' matrices are kept beside the transcripts.
	raw, err = os.ReadFile(filepath.Join(out, transcriptsDir, collapseName(2)))
	if err != nil {
		t.Fatal(err)
	}
	var col struct {
		Step     int `json:"step"`
		Matrices []struct {
			Scheme string      `json:"scheme"`
			LSum   [][]float64 `json:"lsum"`
			Rows   []struct{ Text string }
		} `json:"matrices"`
	}
	if err := json.Unmarshal(raw, &col); err != nil || col.Step != 2 || len(col.Matrices) == 0 {
		t.Fatalf("collapse file: step %d, %d matrices, %v", col.Step, len(col.Matrices), err)
	}
	for _, mat := range col.Matrices {
		if len(mat.LSum) == 0 || len(mat.LSum) != len(mat.Rows) || len(mat.LSum[0]) < 2 || mat.Rows[0].Text == "" {
			t.Errorf("%s: %d rows of %d columns, row text %q", mat.Scheme, len(mat.LSum), len(mat.LSum[0]), mat.Rows[0].Text)
		}
	}
}
