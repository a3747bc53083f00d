package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// runCLI runs the CLI in-process and returns exit code, stdout and stderr.
func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := dispatch(context.Background(), args, stdio{in: strings.NewReader(stdin), out: &out, err: &errOut})
	return code, out.String(), errOut.String()
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func decodeSteps(t *testing.T, out string) []playStep {
	t.Helper()
	var steps []playStep
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var st playStep
		if err := json.Unmarshal(sc.Bytes(), &st); err != nil {
			t.Fatalf("line %q is not a JSON step: %v", sc.Text(), err)
		}
		steps = append(steps, st)
	}
	return steps
}

func TestPlayReplayLevelJSON(t *testing.T) {
	level := writeFile(t, "corridor.xsb", "######\n#@ $.#\n######\n")
	code, out, errOut := runCLI(t, "", "play", "-env", "sokoban", "-level", level, "-actions", "Right,jump,right", "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	steps := decodeSteps(t, out)
	if len(steps) != 4 {
		t.Fatalf("got %d JSON lines, want 4 (reset + 3 actions):\n%s", len(steps), out)
	}
	if steps[0].Step != 0 || steps[0].Observation == "" {
		t.Errorf("reset line = %+v", steps[0])
	}
	if !steps[1].ActionValid || steps[1].Done || steps[1].Reward != -0.1 {
		t.Errorf("first move = %+v", steps[1])
	}
	if steps[2].ActionValid || steps[2].Observation != steps[1].Observation || steps[2].Reward != 0 {
		t.Errorf("invalid action changed something: %+v", steps[2])
	}
	last := steps[3]
	if !last.Done || !last.Success || last.Step != 2 {
		t.Errorf("final step = %+v, want solved at step 2", last)
	}
	if want := -0.1 + -0.1 + 1 + 10; abs(last.Return-want) > 1e-9 {
		t.Errorf("return = %v, want %v", last.Return, want)
	}
}

func TestPlayExpertSolvesSeededLevels(t *testing.T) {
	for _, env := range []string{"sokoban", "frozenlake"} {
		for seed := range 5 {
			code, out, errOut := runCLI(t, "", "play", "-env", env, "-seed", strconv.Itoa(seed), "-expert", "-json")
			if code != 0 {
				t.Fatalf("%s seed %d: exit %d: %s", env, seed, code, errOut)
			}
			steps := decodeSteps(t, out)
			last := steps[len(steps)-1]
			if !last.Success {
				t.Errorf("%s seed %d: expert did not succeed: %+v", env, seed, last)
			}
			for _, st := range steps[1:] {
				if st.Rationale == "" || !st.ActionValid {
					t.Errorf("%s seed %d: expert step without rationale or invalid: %+v", env, seed, st)
				}
			}
		}
	}
}

func TestPlaySameSeedSameEpisode(t *testing.T) {
	args := []string{"play", "-env", "sokoban", "-seed", "17", "-actions", "Up,Left,Down,Right,Up", "-json"}
	_, a, _ := runCLI(t, "", args...)
	_, b, _ := runCLI(t, "", args...)
	if a != b || a == "" {
		t.Errorf("same seed gave different episodes:\n%s\n---\n%s", a, b)
	}
}

func TestPlayInteractive(t *testing.T) {
	level := writeFile(t, "corridor.txt", "######\n#P_XO#\n######\n")
	code, out, errOut := runCLI(t, "right\n\nfly\nRight\n", "play", "-env", "sokoban", "-level", level)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"invalid action", "episode over: steps=2", "success=true"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestPlayConfigAndOverrides(t *testing.T) {
	code, out, errOut := runCLI(t, "", "play", "-config", "../configs/sokoban.yaml", "-set", "dim_x=8", "-set", "dim_y=8", "-seed", "3", "-actions", "Up", "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if steps := decodeSteps(t, out); !strings.Contains(steps[0].Observation, "8 rows x 8 cols") {
		t.Errorf("override dim 8 not applied:\n%s", steps[0].Observation)
	}
}

func TestPlayErrors(t *testing.T) {
	badLevel := writeFile(t, "bad.xsb", "#####\n#@$ #\n#####\n")
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown env", []string{"play", "-env", "chess"}, 1, `unknown environment "chess"`},
		{"no env", []string{"play"}, 2, "no environment"},
		{"unknown key", []string{"play", "-env", "sokoban", "-set", "dim_z=3"}, 1, `unknown key "dim_z"`},
		{"bad level", []string{"play", "-env", "sokoban", "-level", badLevel}, 1, "bad.xsb"},
		{"missing level", []string{"play", "-env", "sokoban", "-level", "/nonexistent/level"}, 1, "no such file"},
		{"exclusive", []string{"play", "-env", "sokoban", "-expert", "-actions", "Up"}, 2, "exclusive"},
		{"bad override", []string{"play", "-env", "sokoban", "-set", "novalue"}, 2, "key=value"},
		{"unknown subcommand", []string{"fly"}, 2, "unknown subcommand"},
	}
	for _, c := range cases {
		code, _, errOut := runCLI(t, "", c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d containing %q", c.name, code, errOut, c.code, c.want)
		}
	}
}

func TestPlayList(t *testing.T) {
	code, out, _ := runCLI(t, "", "play", "-list")
	if code != 0 || !strings.Contains(out, "sokoban") || !strings.Contains(out, "frozenlake") {
		t.Errorf("play -list: exit %d, output %q", code, out)
	}
}

func TestTrainDryRunAndConfigErrors(t *testing.T) {
	code, out, errOut := runCLI(t, "", "-config", "../configs/sokoban.yaml", "-dry-run", "-set", "algo.lr=3e-4", "-out", "/tmp/x")
	if code != 0 || !strings.Contains(out, "name: sokoban") || !strings.Contains(out, "lr: 0.0003") || !strings.Contains(out, "out: /tmp/x") {
		t.Errorf("dry run: exit %d, out %q, err %q", code, out, errOut)
	}
	code, _, errOut = runCLI(t, "", "train", "-config", "../configs/sokoban.yaml", "-set", "env.config.num_boxes=-1")
	if code != 1 || !strings.Contains(errOut, "num_boxes") {
		t.Errorf("invalid env override: exit %d, err %q", code, errOut)
	}
	// -dry-run checks the environment's own section too.
	code, _, errOut = runCLI(t, "", "-config", "../configs/sokoban.yaml", "-set", "env.config.num_boxes=-1", "-dry-run")
	if code != 1 || !strings.Contains(errOut, "num_boxes") {
		t.Errorf("invalid env override with -dry-run: exit %d, err %q", code, errOut)
	}
	code, _, errOut = runCLI(t, "", "-config", "../configs/sokoban.yaml", "-set", "algo.presett=PPO", "-dry-run")
	if code != 1 || !strings.Contains(errOut, `unknown key "presett"`) {
		t.Errorf("unknown key: exit %d, err %q", code, errOut)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
