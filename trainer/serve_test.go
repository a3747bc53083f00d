package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/text/tokenizer"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// writeTinyCheckpoint saves a small random model with its tokenizer.
func writeTinyCheckpoint(t *testing.T) string {
	t.Helper()
	tok := tokenizer.New()
	m, err := native.New(native.Config{Vocab: tok.VocabSize(), DModel: 32, Layers: 1, Heads: 2, DFF: 64, MaxSeq: 256, TieEmbeddings: true}, 1)
	if err != nil {
		t.Fatal(err)
	}
	var tb bytes.Buffer
	if err := tok.Save(&tb); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "tiny-ckpt")
	if err := native.SaveCheckpoint(dir, m, nil, map[string][]byte{"tokenizer.json": tb.Bytes()}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runningServe is `trainer serve` running in the background on loopback.
type runningServe struct {
	base   string // http://127.0.0.1:PORT
	cancel context.CancelFunc
	done   chan error
	errOut *syncBuffer
}

// startServe runs `trainer serve -checkpoint dir` with API key k on a free
// loopback port, and the extra flags, and waits for it to log its URL.
func startServe(t *testing.T, dir string, extra ...string) *runningServe {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	rs := &runningServe{cancel: cancel, done: make(chan error, 1), errOut: &syncBuffer{}}
	go func() {
		rs.done <- runServe(ctx, append([]string{"-checkpoint", dir, "-addr", "127.0.0.1:0", "-api-key", "k"}, extra...), stdio{in: strings.NewReader(""), out: io.Discard, err: rs.errOut})
	}()
	urlRE := regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+)/v1`)
	for deadline := time.Now().Add(10 * time.Second); rs.base == ""; time.Sleep(5 * time.Millisecond) {
		if m := urlRE.FindStringSubmatch(rs.errOut.String()); m != nil {
			rs.base = m[1]
		}
		select {
		case err := <-rs.done:
			t.Fatalf("runServe returned early: %v\n%s", err, rs.errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no URL logged:\n%s", rs.errOut.String())
		}
	}
	return rs
}

// stop cancels the server and checks that it shuts down cleanly.
func (rs *runningServe) stop(t *testing.T) {
	t.Helper()
	rs.cancel()
	select {
	case err := <-rs.done:
		if err != nil {
			t.Fatalf("runServe after cancel: %v\n%s", err, rs.errOut.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("runServe did not stop after cancel")
	}
	if !strings.Contains(rs.errOut.String(), "stopped") {
		t.Errorf("no clean stop logged:\n%s", rs.errOut.String())
	}
	if _, err := http.Get(rs.base + "/health"); err == nil {
		t.Error("the server still answers after shutdown")
	}
}

// postJSON posts body to the running server with its API key and decodes
// the reply into out.
func (rs *runningServe) postJSON(t *testing.T, path, body string, out any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, rs.base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d: %s", path, resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("%s: %v: %s", path, err, raw)
	}
}

func TestServeSubcommand(t *testing.T) {
	dir := writeTinyCheckpoint(t)
	rs := startServe(t, dir)
	base := rs.base

	resp, err := http.Get(base + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/health: %d", resp.StatusCode)
	}

	body := `{"model": "tiny-ckpt", "prompt": [257, 260, 104, 105, 262, 261], "max_tokens": 5, "seed": 3, "logprobs": 0, "return_token_ids": true}`
	var out struct {
		Model   string `json:"model"`
		Choices []struct {
			TokenIDs []int `json:"token_ids"`
			Logprobs struct {
				TokenLogprobs []float64 `json:"token_logprobs"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	rs.postJSON(t, "/v1/completions", body, &out)
	if out.Model != "tiny-ckpt" || len(out.Choices) != 1 || len(out.Choices[0].TokenIDs) == 0 ||
		len(out.Choices[0].TokenIDs) != len(out.Choices[0].Logprobs.TokenLogprobs) {
		t.Fatalf("completion reply %+v", out)
	}
	rs.stop(t)
}

func TestServeUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-checkpoint", "x", "extra"},
		{"-checkpoint", "x", "-max-batch", "0"},
		{"-bogus"},
	} {
		code, _, errOut := runCLI(t, "", append([]string{"serve"}, args...)...)
		if code != 2 {
			t.Errorf("serve %q: exit %d, want 2 (%s)", args, code, errOut)
		}
	}
	code, _, errOut := runCLI(t, "", "serve", "-checkpoint", filepath.Join(t.TempDir(), "missing"))
	if code != 1 || !strings.Contains(errOut, "does not exist") {
		t.Errorf("missing checkpoint: exit %d, %s", code, errOut)
	}
}

// TestMountTinker checks which server answers each path.
func TestMountTinker(t *testing.T) {
	named := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, name) })
	}
	h := mountTinker(named("openai"), named("tinker"))
	for path, want := range map[string]string{
		"/api/v1":              "tinker",
		"/api/v1/":             "tinker",
		"/api/v1/healthz":      "tinker",
		"/api/v1/samplers/s_1": "tinker",
		"/api/v10":             "openai",
		"/api":                 "openai",
		"/v1/models":           "openai",
		"/v1/models/org/name":  "openai",
		"/health":              "openai",
		"/no/such/route":       "openai",
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, nil))
		if got := rec.Body.String(); rec.Code != http.StatusOK || got != want {
			t.Errorf("%s: %d %q, want %q", path, rec.Code, got, want)
		}
	}
}

// TestOrphanedTinkerStateIsRemoved: the temporary Tinker state directory
// of a server that died without cleaning up (its process is gone) is
// removed when the next server starts; a live server's is left alone.
func TestOrphanedTinkerStateIsRemoved(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skip("no `true` command to make a finished process")
	}
	orphan := filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-123", tinkerTempPrefix, gone.Process.Pid))
	live := filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-456", tinkerTempPrefix, os.Getppid()))
	for _, d := range []string{orphan, live} {
		if err := os.MkdirAll(filepath.Join(d, "weights"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	removeOrphanedStateDirs(slog.New(slog.DiscardHandler))
	if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead server's directory is still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live process's directory was removed: %v", err)
	}
}
