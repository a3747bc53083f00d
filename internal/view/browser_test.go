package view

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/internal/report"
	"github.com/agentrl/agentrl/train"
	"github.com/agentrl/agentrl/train/traintest"

	_ "github.com/agentrl/agentrl/envs/sokoban"    // the tiny run's environment
	_ "github.com/agentrl/agentrl/train/inprocess" // its learner
)

var (
	viewRuns    = flag.String("view-runs", "", "TestViewInBrowser: view these run directories (comma-separated patterns) instead of training two tiny runs")
	screenshots = flag.String("screenshots", "", "TestViewInBrowser: also save the screenshots in this directory (the docs' are made with -screenshots ../../docs/viewer)")
)

// tinyRuns trains two tiny Sokoban runs that differ only in their seed
// (one arm of two seeds), with transcripts, collapse readings and
// checkpoints, and returns their parent directory.
func tinyRuns(t *testing.T) string {
	t.Helper()
	parent := t.TempDir()
	seeds := []string{"1", "2"}
	errs := make(chan error, len(seeds))
	for _, seed := range seeds { // at once: each run uses about one core
		cfg := traintest.TinyConfig(t, filepath.Join(parent, "tiny-seed"+seed), 4, "run.seed="+seed)
		go func() {
			tr, err := train.New(cfg, traintest.QuietOptions())
			if err == nil {
				err = tr.Run(context.Background())
			}
			errs <- err
		}()
	}
	for range seeds {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	return parent
}

// counts are what the tests count in the page's DOM.
const countsJS = `({
  lines: document.querySelectorAll('svg.plot path.line').length,
  bands: document.querySelectorAll('svg.plot path.band').length,
  points: document.querySelectorAll('svg.plot circle.val-point').length,
  intervals: document.querySelectorAll('svg.plot line.ci').length,
  charts: document.querySelectorAll('.chart svg.plot').length,
  regimes: document.querySelectorAll('svg.regime-strip rect.seg').length,
  episodes: document.querySelectorAll('li.episode').length,
  tokens: document.querySelectorAll('span.tok').length,
  coloured: [...document.querySelectorAll('span.tok')].filter(s => s.style.background && s.style.background !== 'rgb(236, 238, 242)').length,
  cells: document.querySelectorAll('svg.heatmap rect.cell').length,
  errors: document.querySelectorAll('#main .error').length,
})`

type domCounts struct {
	Lines, Bands, Points, Intervals, Charts, Regimes, Episodes, Tokens, Coloured, Cells, Errors int
}

// show opens a page of the view and waits until it is drawn.
func show(t *testing.T, b *browser, url, page string) (domCounts, time.Duration) {
	t.Helper()
	// Marked stale, the page counts as drawn once it says so again: after
	// a reload, or a new address that only changes the hash.
	b.eval(`document.body && (document.body.dataset.page = 'stale')`, nil)
	start := time.Now()
	b.navigate(url)
	b.waitFor(fmt.Sprintf(`document.body && document.body.dataset.page === %q && !document.querySelector('#main > .rendering')`, page), 60*time.Second)
	took := time.Since(start)
	var c domCounts
	b.must(countsJS, &c)
	if c.Errors > 0 {
		var text string
		b.must(`document.querySelector('#main .error').textContent`, &text)
		t.Fatalf("%s: the page shows an error: %s", url, text)
	}
	return c, took
}

// lastFile is the name of the last file in dir matching re.
func lastFile(t *testing.T, dir string, re *regexp.Regexp) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	last := ""
	for _, e := range entries {
		if re.MatchString(e.Name()) {
			last = e.Name()
		}
	}
	if last == "" {
		t.Fatalf("%s: no file matches %s", dir, re)
	}
	return last
}

// keptEpisode finds the training episode with the most turns among those
// the filter kept: its transcript ("train-5") and index.
func keptEpisode(t *testing.T, dir string) (string, int) {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(dir, "train-step*.tokens.jsonl"))
	file, index, turns := "", 0, 0
	for _, m := range matches {
		data, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		var step int
		fmt.Sscanf(filepath.Base(m), "train-step%d", &step)
		dec := json.NewDecoder(bytes.NewReader(data))
		for i := 0; dec.More(); i++ {
			var rec struct {
				Kept  bool              `json:"kept"`
				Turns []json.RawMessage `json:"turns"`
			}
			if err := dec.Decode(&rec); err != nil {
				t.Fatal(err)
			}
			if rec.Kept && len(rec.Turns) > turns {
				file, index, turns = fmt.Sprintf("train-%d", step), i, len(rec.Turns)
			}
		}
	}
	return file, index
}

// TestViewInBrowser loads the view of real runs in headless Chromium, served
// and exported, and checks what it draws: curves with a seed band and
// validation intervals, the collapse alarm's regimes, the listed
// transcripts with coloured tokens, the heatmap of a collapse reading, the
// summary; a run that writes a new row updates the open page. It saves a
// screenshot of each page.
func TestViewInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two tiny runs and drives Chromium")
	}
	if chromium() == "" && os.Getenv("AGENTRL_REQUIRE_CHROMIUM") != "1" {
		t.Skip("no Chromium on the PATH (apt-get install chromium, or set AGENTRL_CHROMIUM)")
	}
	start := time.Now()
	// Chromium starts while the runs train.
	ready := launchBrowser(t, 1400, 900)
	var patterns []string
	if *viewRuns != "" {
		patterns = strings.Split(*viewRuns, ",")
	} else {
		patterns = []string{tinyRuns(t)}
	}
	t.Logf("runs ready in %v", time.Since(start).Round(time.Millisecond))
	srv, err := New(patterns, Options{Poll: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(srv.Close) // ends the page's event stream first, which ts.Close waits for
	runs := srv.Runs()
	run := runs[len(runs)-1]
	shots := []string{t.TempDir()}
	if *screenshots != "" {
		shots = append(shots, *screenshots)
	}
	t.Logf("screenshots in %s", strings.Join(shots, ", "))

	b := ready()
	t.Logf("Chromium ready at %v", time.Since(start).Round(time.Millisecond))

	// Curves: every default metric the runs logged, the two seeds as one
	// band, the collapse alarm's regimes.
	c, took := show(t, b, ts.URL+"/#/curves", "curves")
	t.Logf("curves: %+v in %v", c, took.Round(time.Millisecond))
	if c.Charts < 4 || c.Lines < c.Charts {
		t.Errorf("curves: %d charts, %d lines drawn", c.Charts, c.Lines)
	}
	if len(runs) > 1 && c.Bands == 0 {
		t.Errorf("curves: no band for the runs that differ only in seed")
	}
	if c.Regimes == 0 {
		t.Errorf("curves: no regime timeline")
	}
	b.screenshot("curves.png", 1500, shots...)

	// Each seed alone: validation points with their Wilson intervals.
	c, _ = show(t, b, ts.URL+"/#/curves?group=0&m=val-env/success,train/success,actor/entropy,collapse_first_turn_sample/mi_estimate", "curves")
	if c.Points == 0 || c.Intervals < 3*c.Points {
		t.Errorf("ungrouped curves: %d validation points, %d interval lines", c.Points, c.Intervals)
	}

	// The smoothing the page draws is report.EMA's.
	xs := []float64{1, 3, 2, 5, math.NaN(), 4, 8}
	var js []*float64
	b.must(`agentrlView.ema([1, 3, 2, 5, NaN, 4, 8], 0.7).map(v => Number.isFinite(v) ? v : null)`, &js)
	for i, want := range report.EMA(xs, 0.7) {
		if got := js[i]; (got == nil) != math.IsNaN(want) || (got != nil && math.Abs(*got-want) > 1e-12) {
			t.Errorf("EMA point %d: page %v, Go %v", i, got, want)
		}
	}

	// Transcripts: the last training file's episodes (the page's first),
	// tokens coloured by log-prob.
	tdir := filepath.Join(run, transcripts)
	last := lastFile(t, tdir, regexp.MustCompile(`^train-step\d+\.txt$`))
	text, err := os.ReadFile(filepath.Join(tdir, last))
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Count(text, []byte("=== group "))
	invalid := 0 // episodes with a reply that took no valid action
	for _, ep := range strings.Split(string(text), "=== group ")[1:] {
		if regexp.MustCompile(`(?m)^No valid action`).MatchString(ep) {
			invalid++
		}
	}
	c, took = show(t, b, ts.URL+"/#/transcripts?run="+run, "transcripts")
	t.Logf("transcripts: %+v in %v; %d of %d episodes with an invalid action", c, took.Round(time.Millisecond), invalid, want)
	if c.Episodes != want {
		t.Errorf("transcripts: %d episodes listed, %s has %d", c.Episodes, last, want)
	}
	var badges int
	b.must(`document.querySelectorAll('li.episode .badge.invalid').length`, &badges)
	if badges != invalid {
		t.Errorf("transcripts: %d episodes marked invalid, %s has %d", badges, last, invalid)
	}
	if c.Tokens == 0 || c.Coloured == 0 {
		t.Errorf("transcripts: %d tokens, %d coloured", c.Tokens, c.Coloured)
	}
	var legend string
	b.must(`document.querySelector('.episode-view').innerText`, &legend)
	if !strings.Contains(legend, "Entropy per token is not recorded") {
		t.Errorf("the transcript legend does not say that entropy per token is not recorded:\n%.400s", legend)
	}
	if c, _ := show(t, b, ts.URL+"/#/transcripts?valid=invalid&run="+run, "transcripts"); c.Episodes != invalid {
		t.Errorf("transcripts with some invalid action: %d listed, want %d", c.Episodes, invalid)
	}
	if c, _ := show(t, b, ts.URL+"/#/transcripts?valid=valid&run="+run, "transcripts"); c.Episodes != want-invalid {
		t.Errorf("transcripts with only valid actions: %d listed, want %d", c.Episodes, want-invalid)
	}
	// The screenshots show an episode the filter kept, with the most
	// turns, its tokens coloured by their log-prob, then by their
	// advantage.
	if file, ep := keptEpisode(t, tdir); file != "" {
		show(t, b, fmt.Sprintf("%s/#/transcripts?run=%s&file=%s&ep=%d", ts.URL, run, file, ep), "transcripts")
		b.screenshot("transcripts.png", 1000, shots...)
		show(t, b, fmt.Sprintf("%s/#/transcripts?run=%s&file=%s&ep=%d&color=advantage", ts.URL, run, file, ep), "transcripts")
		b.must(`document.querySelectorAll('span.tok').length`, &c.Tokens)
		if c.Tokens == 0 {
			t.Error("a kept episode coloured by advantage shows no tokens")
		}
	}
	b.screenshot("transcripts-advantage.png", 1000, shots...)
	// Clicking another episode shows it.
	if want > 1 {
		b.must(`document.querySelectorAll('li.episode')[1].click()`, nil)
		b.waitFor(`document.querySelectorAll('li.episode')[1] && document.querySelectorAll('li.episode')[1].classList.contains('selected')`, 10*time.Second)
	}

	// Collapse: the last reading's first matrix as a heatmap.
	var reading struct {
		Matrices []struct {
			LSum [][]*float64 `json:"lsum"`
		} `json:"matrices"`
	}
	raw, err := os.ReadFile(filepath.Join(tdir, lastFile(t, tdir, collapseRE)))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &reading); err != nil {
		t.Fatal(err)
	}
	cells := len(reading.Matrices[0].LSum) * len(reading.Matrices[0].LSum[0])
	c, took = show(t, b, ts.URL+"/#/collapse?run="+run, "collapse")
	t.Logf("collapse: %d cells in %v", c.Cells, took.Round(time.Millisecond))
	if c.Cells != cells {
		t.Errorf("collapse: %d heatmap cells, the reading has %d", c.Cells, cells)
	}
	var at struct{ X, Y float64 }
	b.must(`(() => { const r = document.querySelector('svg.heatmap rect.cell.own').getBoundingClientRect(); return {X: r.x + r.width / 2, Y: r.y + r.height / 2}; })()`, &at)
	b.mouse(at.X, at.Y)
	b.waitFor(`document.querySelector('.row-text').textContent.startsWith('row ')`, 10*time.Second)
	b.screenshot("collapse.png", 1100, shots...)

	// Summary: as the console prints it.
	show(t, b, ts.URL+"/#/summary?run="+run, "summary")
	var summary string
	b.must(`document.querySelector('.summary-text').textContent`, &summary)
	if !strings.Contains(summary, "validation success on") || !strings.Contains(summary, "warm start") {
		t.Errorf("summary page:\n%s", summary)
	}
	b.screenshot("summary.png", 1100, shots...)

	// Live: a row appended to a run's metrics shows up without a reload.
	if *viewRuns == "" {
		show(t, b, ts.URL+"/#/curves?group=0&m=train/success", "curves")
		var x1 float64
		b.must(`Number(document.querySelector('.chart svg.plot').dataset.x1)`, &x1)
		row := fmt.Sprintf("{\"step\":%d,\"train/success\":0.5}\n", int(x1)+5)
		f, err := os.OpenFile(filepath.Join(run, "metrics.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(row)
		f.Close()
		took := b.waitFor(fmt.Sprintf(`Number(document.querySelector('.chart svg.plot').dataset.x1) >= %d`, int(x1)+5), 20*time.Second)
		t.Logf("live: a new row drawn %v after it was written", took.Round(time.Millisecond))
	}

	// The served page's requests are in its resource timings (which the
	// export is checked against below).
	var asked int
	b.must(`performance.getEntriesByType('resource').filter(e => e.name.includes('/api/')).length`, &asked)
	if asked == 0 {
		t.Error("the served page's resource timings hold no /api/ request")
	}

	// The export: one file, opened from disk with the network off, shows
	// the same and asks for nothing beyond itself.
	b.call("Network.enable", nil, nil)
	b.call("Network.emulateNetworkConditions", map[string]any{"offline": true, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}, nil)
	var page bytes.Buffer
	if err := srv.Export(&page, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "view.html")
	if err := os.WriteFile(file, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("export: %.1f kB", float64(page.Len())/1e3)
	c, _ = show(t, b, "file://"+file+"#/curves", "curves")
	if c.Charts < 4 || c.Lines < c.Charts || (len(runs) > 1 && c.Bands == 0) || c.Regimes == 0 {
		t.Errorf("exported curves: %+v", c)
	}
	var status string
	b.must(`document.getElementById('status').textContent`, &status)
	if !strings.HasPrefix(status, "exported ") {
		t.Errorf("exported page's status %q", status)
	}
	b.screenshot("export-curves.png", 900, shots[:1]...)
	if c, _ = show(t, b, "file://"+file+"#/transcripts?run="+run, "transcripts"); c.Episodes != want || c.Tokens == 0 {
		t.Errorf("exported transcripts: %+v, want %d episodes", c, want)
	}
	if c, _ = show(t, b, "file://"+file+"#/transcripts?run="+run+"&q=turn", "transcripts"); c.Episodes != want {
		t.Errorf("exported transcripts with a search: %+v", c)
	}
	var hits int
	b.must(`document.querySelectorAll('.hits a').length`, &hits)
	if hits == 0 {
		t.Errorf("the exported page's search found nothing")
	}
	if c, _ = show(t, b, "file://"+file+"#/collapse?run="+run, "collapse"); c.Cells != cells {
		t.Errorf("exported collapse: %d cells, want %d", c.Cells, cells)
	}
	var fetched []string
	b.must(`performance.getEntriesByType('resource').map(e => e.name).filter(n => !n.startsWith('file:') && !n.startsWith('data:'))`, &fetched)
	if len(fetched) > 0 {
		t.Errorf("the exported page fetched %v", fetched)
	}
	t.Logf("done in %v", time.Since(start).Round(time.Millisecond))
}
