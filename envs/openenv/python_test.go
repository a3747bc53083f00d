package openenv

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

// pythonWithWebsockets finds a Python 3 that has the websockets package.
// .ci/run installs Debian's python3-websockets and sets
// AGENTRL_REQUIRE_PYTHON=1, so there the test cannot be skipped.
func pythonWithWebsockets(t *testing.T) string {
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(py); err == nil && exec.Command(path, "-c", "import websockets").Run() == nil {
			return path
		}
	}
	if os.Getenv("AGENTRL_REQUIRE_PYTHON") != "" {
		t.Fatal("no python3 with the websockets package (apt-get install python3-websockets)")
	}
	t.Skip("no python3 with the websockets package; .ci/run installs it")
	return ""
}

// TestPythonClientExample runs docs/examples/openenv_client.py, an
// independent client written against the protocol alone, against a
// server, then replays its actions in-process: the same return, success
// and step count.
func TestPythonClientExample(t *testing.T) {
	py := pythonWithWebsockets(t)
	_, hs := serve(t, "sokoban", Options{})
	out, err := exec.Command(py, "../../docs/examples/openenv_client.py", hs.URL, "5").CombinedOutput()
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var got struct {
		Actions []string `json:"actions"`
		Return  float64  `json:"return"`
		Success bool     `json:"success"`
		Steps   int      `json:"steps"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	f, _ := envs.NewFactory("sokoban", nil)
	env, _ := f.New()
	env.Reset(5)
	total, success := 0.0, false
	for _, a := range got.Actions {
		res, err := env.Step(a)
		if err != nil {
			t.Fatal(err)
		}
		total += res.Reward
		success = res.Info.Success
	}
	if len(got.Actions) == 0 || got.Steps != len(got.Actions) || math.Abs(got.Return-total) > 1e-9 || got.Success != success {
		t.Errorf("python client: %d actions, return %v, success %v, %d steps; in-process: return %v, success %v",
			len(got.Actions), got.Return, got.Success, got.Steps, total, success)
	}
}
