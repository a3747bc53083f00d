package view

import (
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

var loadTimes = flag.Bool("load-times", false, "TestViewLoadTimes: measure how long a 400-step run and a 50-run study take to load, in the server and in Chromium")

// studyDir writes a synthetic study: arms × seeds runs of steps steps,
// each row as wide as a real run's (about 140 metrics), with transcripts
// every 10 steps.
func studyDir(t testing.TB, arms, seeds, steps int) string {
	t.Helper()
	dir := t.TempDir()
	for a := range arms {
		for s := range seeds {
			fakeRun{steps: steps, extra: 135, finished: true, episodes: 4,
				config: map[string]string{"env.name": "sokoban", "algo.lr": fmt.Sprint(0.001 * float64(a+1)), "run.seed": fmt.Sprint(s + 1)},
			}.write(t, filepath.Join(dir, fmt.Sprintf("lr%d-seed%d", a, s)))
		}
	}
	return dir
}

// cpuTime is the CPU time the test process has used, user and system:
// unlike the wall time, it does not grow with the load of a shared machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// timeGet times one request.
func timeGet(t testing.TB, h http.Handler, url string) time.Duration {
	t.Helper()
	start := time.Now()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("%s: %d %s", url, rec.Code, rec.Body)
	}
	return time.Since(start)
}

// TestViewLoadTimes measures (with -load-times) a 400-step run and a study of
// 10 arms × 5 seeds of 400 steps: the server's first and later replies,
// and the time Chromium takes to draw the Curves page of each.
func TestViewLoadTimes(t *testing.T) {
	if !*loadTimes {
		t.Skip("a measurement: go test ./internal/view -run TestViewLoadTimes -v -args -load-times")
	}
	start := time.Now()
	dir := studyDir(t, 10, 5, 400)
	t.Logf("wrote 50 runs of 400 steps in %v", time.Since(start).Round(time.Millisecond))
	one := filepath.Join(dir, "lr0-seed0")
	for _, c := range []struct {
		name     string
		patterns []string
	}{{"one 400-step run", []string{one}}, {"50 runs", []string{dir}}} {
		srv, err := New(c.patterns, Options{})
		if err != nil {
			t.Fatal(err)
		}
		h := srv.Handler()
		cpu0 := cpuTime()
		cold := timeGet(t, h, "/api/runs")
		cpu := cpuTime() - cpu0
		warm := timeGet(t, h, "/api/runs")
		series := timeGet(t, h, "/api/series?metric=train/success")
		t.Logf("%s: /api/runs %v first (%v of CPU), %v after; /api/series %v", c.name, cold.Round(time.Millisecond), cpu.Round(time.Millisecond),
			warm.Round(time.Millisecond), series.Round(time.Millisecond))
		srv.Close()
	}
	if chromium() == "" {
		t.Log("no Chromium: the page's times are not measured")
		return
	}
	b := startBrowser(t, 1400, 900)
	for _, c := range []struct {
		name     string
		patterns []string
	}{{"one 400-step run", []string{one}}, {"50 runs", []string{dir}}} {
		srv, err := New(c.patterns, Options{})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(srv.Handler())
		counts, first := show(t, b, ts.URL+"/#/curves", "curves")
		_, again := show(t, b, ts.URL+"/#/curves?band=std", "curves")
		_, episodes := show(t, b, ts.URL+"/#/transcripts", "transcripts")
		t.Logf("%s in Chromium: Curves drawn %v after the address was opened (cold server; %d charts, %d lines, %d bands), %v redrawn, Transcripts %v",
			c.name, first.Round(time.Millisecond), counts.Charts, counts.Lines, counts.Bands, again.Round(time.Millisecond), episodes.Round(time.Millisecond))
		srv.Close()
		ts.Close()
	}
}
