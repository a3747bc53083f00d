package main

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/envs/openenv"
)

// startServeEnv runs `trainer serve-env args…` on a free loopback port
// and returns the base URLs it logs, and a stop function that waits for
// it to exit.
func startServeEnv(t *testing.T, args ...string) (urls []string, stop func() (int, string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, append([]string{"serve-env", "-addr", "127.0.0.1:0"}, args...), stdio{in: strings.NewReader(""), out: &bytes.Buffer{}, err: &errOut})
	}()
	re := regexp.MustCompile(`msg=serving env=\S+ url=(\S+)`)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(errOut.String(), "msg=limits") {
			for _, m := range re.FindAllStringSubmatch(errOut.String(), -1) {
				urls = append(urls, m[1])
			}
			break
		}
		select {
		case code := <-done:
			cancel()
			t.Fatalf("serve-env exited %d: %s", code, errOut.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if len(urls) == 0 {
		cancel()
		t.Fatalf("serve-env did not start: %s", errOut.String())
	}
	return urls, func() (int, string) {
		cancel()
		select {
		case code := <-done:
			return code, errOut.String()
		case <-time.After(15 * time.Second):
			t.Fatal("serve-env did not stop")
			return 0, ""
		}
	}
}

func TestServeEnvAndPlayAgainstIt(t *testing.T) {
	urls, stop := startServeEnv(t, "-env", "sokoban", "-set", "dim_x=7", "-set", "dim_y=7")
	// play against the remote environment prints exactly what playing the
	// same environment in-process prints.
	code, remote, errOut := runCLI(t, "", "play", "-env", "openenv", "-set", "url="+urls[0], "-seed", "9", "-actions", "Up,Left,jump,Down", "-json")
	if code != 0 {
		t.Fatalf("remote play exit %d: %s", code, errOut)
	}
	code, local, errOut := runCLI(t, "", "play", "-env", "sokoban", "-set", "dim_x=7", "-set", "dim_y=7", "-seed", "9", "-actions", "Up,Left,jump,Down", "-json")
	if code != 0 {
		t.Fatalf("local play exit %d: %s", code, errOut)
	}
	if remote != local {
		t.Errorf("remote play:\n%s\nlocal play:\n%s", remote, local)
	}
	if code, logs := stop(); code != 0 || !strings.Contains(logs, "msg=stopped") {
		t.Errorf("serve-env exit %d:\n%s", code, logs)
	}
}

func TestServeEnvAll(t *testing.T) {
	urls, stop := startServeEnv(t, "-env", "all", "-max-sessions", "4")
	defer stop()
	bundled := []string{"2048", "alfworld", "bandit", "codeexec", "countdown", "frozenlake", "search", "sokoban", "sudoku", "webshop"}
	if len(urls) != len(bundled) {
		t.Fatalf("serving %v, want the %d bundled environments %v", urls, len(bundled), bundled)
	}
	for _, name := range bundled {
		if !slices.ContainsFunc(urls, func(u string) bool { return strings.HasSuffix(u, "/"+name) }) {
			t.Errorf("serving %v: no URL for %q", urls, name)
		}
	}
	for _, u := range urls {
		resp, err := http.Get(u + "/metadata")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s/metadata: %s", u, resp.Status)
		}
		cfg := openenv.DefaultClientConfig()
		cfg.URL = u
		c := openenv.NewClient(cfg)
		if _, err := c.Reset(1); err != nil {
			t.Errorf("%s: %v", u, err)
		}
		c.Close()
	}
}

func TestServeEnvUsage(t *testing.T) {
	for _, args := range [][]string{
		{"serve-env"},
		{"serve-env", "-env", "nosuchenv"},
		{"serve-env", "-env", "openenv"},
		{"serve-env", "-env", "all", "-set", "size=5"},
		{"serve-env", "-env", "sokoban", "-max-sessions", "0"},
	} {
		if code, _, _ := runCLI(t, "", args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// TestEvalServedModelOnRemoteEnvironment: a served model (vLLM's API,
// `trainer serve` standing in) plays a remote environment (`serve-env`)
// through `trainer eval`; every episode runs to its turn limit.
func TestEvalServedModelOnRemoteEnvironment(t *testing.T) {
	urls, stop := startServeEnv(t, "-env", "frozenlake")
	defer stop()
	ts := standInModelServer(t, "stand-in", 4096)
	cfg := writeFile(t, "remote.yaml", "env:\n  name: openenv\n  config:\n    url: "+urls[0]+"\nrollout:\n  max_turns: 3\n  history_window: 0\n  prompt_style: ragen\n  sampling:\n    max_tokens: 8\n")
	code, out, errOut := runCLI(t, "", "eval", "-config", cfg, "-vllm", ts.URL, "-episodes", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if m := evalLine.FindStringSubmatch(out); m == nil || m[1] != "3" || m[7] != "0" {
		t.Fatalf("want 3 episodes, none failed: %q %s", out, errOut)
	}
}
