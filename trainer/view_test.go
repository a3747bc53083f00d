package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// viewRun writes a small run directory: its identity, two metrics rows.
func viewRun(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "run.json"), []byte(`{"config":{"run.seed":"1","env.name":"sokoban"}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte("{\"step\":0,\"val-env/success\":0.5}\n{\"step\":1,\"train/success\":0.6}\n"), 0o644)
	return dir
}

// lockedBuffer is a bytes.Buffer safe to read while a command writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestViewServes(t *testing.T) {
	dir := viewRun(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, []string{"view", "-addr", "127.0.0.1:0", "-api-key", "k", dir}, stdio{in: strings.NewReader(""), out: &out, err: &errOut})
	}()
	urlRE := regexp.MustCompile(`http://\S+`)
	var url string
	for start := time.Now(); url == ""; time.Sleep(20 * time.Millisecond) {
		url = urlRE.FindString(out.String())
		if time.Since(start) > 20*time.Second {
			t.Fatalf("no URL printed: %q %q", out.String(), errOut.String())
		}
	}
	if !strings.Contains(out.String(), "view of 1 run(s)") || !strings.HasSuffix(url, "/?key=k") {
		t.Errorf("printed %q", out.String())
	}
	res, err := http.Get(strings.Replace(url, "/?key=k", "/api/runs?key=k", 1))
	if err != nil {
		t.Fatal(err)
	}
	var runs struct {
		Runs []struct{ ID string } `json:"runs"`
	}
	err = json.NewDecoder(res.Body).Decode(&runs)
	res.Body.Close()
	if err != nil || len(runs.Runs) != 1 || runs.Runs[0].ID != dir {
		t.Errorf("/api/runs: %v %+v", err, runs)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 && code != exitInterrupted {
			t.Errorf("exit %d after the interrupt: %s", code, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the view did not stop")
	}
}

func TestViewExportAndUsage(t *testing.T) {
	dir := viewRun(t)
	page := filepath.Join(t.TempDir(), "view.html")
	code, out, errOut := runCLI(t, "", "view", "-export", page, filepath.Dir(dir))
	if code != 0 || !strings.Contains(out, page+": 1 run(s)") {
		t.Fatalf("export: exit %d, %q %q", code, out, errOut)
	}
	html, err := os.ReadFile(page)
	if err != nil || !bytes.Contains(html, []byte(`<script id="view-data" type="application/json">`)) || bytes.Contains(html, []byte(`src="static/`)) {
		t.Errorf("the export is not one self-contained page (%v)", err)
	}
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"view", "-addr", "0.0.0.0:0", dir}, 2, "needs an API key"},
		{[]string{"view", "-curves-only", dir}, 2, "-curves-only goes with -export"},
		{[]string{"view", filepath.Join(t.TempDir(), "none")}, 1, "no run directory"},
	} {
		t.Setenv("AGENTRL_API_KEY", "")
		code, _, errOut := runCLI(t, "", tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tc.args, code, errOut, tc.code, tc.msg)
		}
	}
}
