package view

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/internal/stats"
	"github.com/agentrl/agentrl/text/tokenizer"
)

// study writes two arms (algo.lr) of two seeds each under one directory,
// the last run unfinished, and returns the directory and the runs.
func study(t *testing.T) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	var runs []string
	for _, lr := range []string{"0.001", "0.002"} {
		for _, seed := range []string{"1", "2"} {
			d := filepath.Join(dir, "lr"+lr, "seed"+seed)
			fakeRun{steps: 40, extra: 2, finished: lr != "0.002" || seed != "2", episodes: 6,
				config: map[string]string{"env.name": "sokoban", "algo.lr": lr, "run.seed": seed}}.write(t, d)
			runs = append(runs, d)
		}
	}
	// What is not a run: the shared warm-start cache, a checkpoint.
	os.MkdirAll(filepath.Join(dir, "cache", "warmstart"), 0o755)
	os.WriteFile(filepath.Join(dir, "cache", "warmstart", "metrics.jsonl"), []byte("{}\n"), 0o644)
	return dir, runs
}

// getJSON asks h for url and decodes the reply into out, failing on a
// status other than want.
func getJSON(t *testing.T, h http.Handler, u string, want int, out any) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, u, nil))
	if rec.Code != want {
		t.Fatalf("GET %s: %d %s, want %d", u, rec.Code, rec.Body, want)
	}
	if out != nil && want == http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			t.Fatalf("GET %s: %v\n%s", u, err, rec.Body)
		}
	}
	return rec
}

func newServer(t *testing.T, patterns ...string) *Server {
	t.Helper()
	s, err := New(patterns, Options{Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestFindRuns(t *testing.T) {
	dir, runs := study(t)
	for _, tc := range []struct {
		patterns []string
		want     []string
	}{
		{[]string{dir}, runs},
		{[]string{filepath.Join(dir, "lr0.001", "*")}, runs[:2]},
		{[]string{runs[3], runs[0], runs[3]}, []string{runs[0], runs[3]}},
		{[]string{filepath.Join(dir, "nothing*")}, nil},
	} {
		got, err := findRuns(tc.patterns)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("findRuns(%v) = %v, %v; want %v", tc.patterns, got, err, tc.want)
		}
	}
	if _, err := New([]string{filepath.Join(dir, "nothing")}, Options{}); err == nil || !strings.Contains(err.Error(), "no run directory") {
		t.Errorf("New on no run: %v", err)
	}
	if got := names([]string{"/a/b/x", "/a/b/y/z"}); !slices.Equal(got, []string{"x", "y/z"}) {
		t.Errorf("names: %v", got)
	}
	if got := names([]string{"/a/run"}); !slices.Equal(got, []string{"run"}) {
		t.Errorf("names of one run: %v", got)
	}
}

func TestRunsAndSeries(t *testing.T) {
	dir, runs := study(t)
	h := newServer(t, dir).Handler()
	var rr RunsReply
	getJSON(t, h, "/api/runs", http.StatusOK, &rr)
	if len(rr.Runs) != 4 || len(rr.Arms) != 2 {
		t.Fatalf("%d runs in %d arms, want 4 in 2: %+v", len(rr.Runs), len(rr.Arms), rr)
	}
	for i, a := range rr.Arms {
		lr := []string{"0.001", "0.002"}[i]
		if a.Label != "algo.lr="+lr || !slices.Equal(a.Runs, runs[2*i:2*i+2]) {
			t.Errorf("arm %d: %+v", i, a)
		}
	}
	first, last := rr.Runs[0], rr.Runs[3]
	if first.Name != "lr0.001/seed1" || first.Seed != "1" || first.Env != "sokoban" || first.Status != "finished" || first.Live ||
		first.Rows != 41 || first.LastStep != 40 || first.Steps != 40 || first.ValEpisodes != 128 {
		t.Errorf("first run: %+v", first)
	}
	if last.Arm != 1 || last.Status != "running" || !last.Live || last.ValEpisodes != 128 {
		t.Errorf("unfinished run: %+v", last)
	}
	if !slices.IsSorted(rr.Metrics) || !slices.Contains(rr.Metrics, "extra/metric_001") || slices.Contains(rr.Metrics, "step") {
		t.Errorf("metrics: %v", rr.Metrics)
	}

	var sr SeriesReply
	getJSON(t, h, "/api/series?metric=val-env/success", http.StatusOK, &sr)
	if sr.Metric != "val-env/success" || len(sr.Runs) != 4 {
		t.Fatalf("series: %+v", sr)
	}
	s := sr.Runs[0]
	if !slices.Equal(s.Steps, []int{0, 10, 20, 30, 40}) || s.Episodes != 128 || len(s.Low) != 5 || len(s.High) != 5 {
		t.Fatalf("validation series: %+v", s)
	}
	for i, v := range s.Values {
		lo, hi := stats.Wilson(v, 128)
		if s.Low[i] != lo || s.High[i] != hi || !(lo < v && v < hi) {
			t.Errorf("point %d: %v [%v, %v], want [%v, %v]", i, v, s.Low[i], s.High[i], lo, hi)
		}
	}
	sr = SeriesReply{}
	getJSON(t, h, "/api/series?metric=train/success", http.StatusOK, &sr)
	if s := sr.Runs[0]; len(s.Steps) != 40 || s.Steps[0] != 1 || s.Low != nil {
		t.Errorf("training series: %d steps from %d, intervals %v", len(s.Steps), s.Steps[0], s.Low)
	}
	// A metric logged as null (not finite) has no points.
	getJSON(t, h, "/api/series?metric=train/score", http.StatusOK, &sr)
	if len(sr.Runs) != 0 {
		t.Errorf("null values: %+v", sr.Runs)
	}
	getJSON(t, h, "/api/series", http.StatusBadRequest, nil)

	// A row appended shows at once; a line still being written waits for
	// its end; a file rewritten from the start (a resumed run trims its
	// metrics) is read again.
	path := filepath.Join(runs[0], "metrics.jsonl")
	appendTo(t, path, "{\"step\":41,\"train/success\":0.5}\n{\"step\":42,\"train/su")
	getJSON(t, h, "/api/series?metric=train/success", http.StatusOK, &sr)
	if got := sr.Runs[0].Steps; got[len(got)-1] != 41 {
		t.Errorf("after an appended row: last step %d", got[len(got)-1])
	}
	appendTo(t, path, "ccess\":0.25}\n")
	getJSON(t, h, "/api/series?metric=train/success", http.StatusOK, &sr)
	if got := sr.Runs[0]; got.Steps[len(got.Steps)-1] != 42 || got.Values[len(got.Values)-1] != 0.25 {
		t.Errorf("after the line's end: %v %v", got.Steps[len(got.Steps)-3:], got.Values[len(got.Values)-3:])
	}
	tmp := path + ".new"
	os.WriteFile(tmp, []byte("{\"step\":0,\"val-env/success\":0.5}\n{\"step\":1,\"train/success\":0.75}\n"), 0o644)
	os.Rename(tmp, path)
	getJSON(t, h, "/api/series?metric=train/success", http.StatusOK, &sr)
	if got := sr.Runs[0]; !slices.Equal(got.Steps, []int{1}) || got.Values[0] != 0.75 {
		t.Errorf("after a rewrite: %+v", got)
	}
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(text)
	f.Close()
}

func TestScanRow(t *testing.T) {
	var m metricsCache
	m.reset()
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{`{"step":3,"a/b":-1.5e-3,"c":null,"d":12}`, true},
		{` { "step" : 3 , "a/b" : -0.0015 , "c" : null , "d" : 12 } `, true},
		{`{}`, true},
		{`{"a\"b":1}`, false},
		{`{"a":{"b":1}}`, false},
		{`{"a":"x"}`, false},
		{`{"a":1`, false},
		{`{"a":1}x`, false},
	} {
		got, ok := m.scanRow([]byte(tc.line), nil)
		if ok != tc.ok {
			t.Errorf("%s: ok %v", tc.line, ok)
			continue
		}
		if !ok {
			continue
		}
		want := decodeRow([]byte(tc.line), nil)
		norm := func(ps []pair) string {
			slices.SortFunc(ps, func(a, b pair) int { return strings.Compare(a.key, b.key) })
			return fmt.Sprint(ps)
		}
		if norm(got) != norm(want) {
			t.Errorf("%s: %v, encoding/json reads %v", tc.line, got, want)
		}
	}
	m.addLine([]byte(`{"step":7,"x":1,"y":null}`))
	m.addLine([]byte(`{"x":2}`)) // no step: not a row
	m.addLine([]byte(`{"step":8,"x\u0041":3}`))
	if m.rows != 2 || m.lastStep != 8 || !slices.Equal(m.names(), []string{"x", "xA"}) || m.cols["y"] != nil {
		t.Errorf("rows %d, last step %d, metrics %v", m.rows, m.lastStep, m.names())
	}
}

func TestTranscripts(t *testing.T) {
	dir, runs := study(t)
	run := runs[0]
	// A checkpoint's tokenizer: agentrl's byte-level BPE without merges,
	// whose ids below 256 are bytes.
	ck := filepath.Join(run, "checkpoints", "latest")
	os.MkdirAll(ck, 0o755)
	if err := tokenizer.New().SaveFile(filepath.Join(ck, "tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	h := newServer(t, dir).Handler()
	q := "?run=" + url.QueryEscape(run)

	var list TranscriptsReply
	getJSON(t, h, "/api/transcripts"+q, http.StatusOK, &list)
	if len(list.Files) != 5 || list.Files[0] != (TranscriptFile{"train", 0}) || list.Files[4].Step != 40 ||
		!slices.Equal(list.Collapse, []int{10}) || list.Tokenizer != filepath.Join(ck, "tokenizer.json") || list.TokenizerError != "" {
		t.Errorf("transcripts: %+v", list)
	}
	var eps EpisodesReply
	getJSON(t, h, "/api/episodes"+q+"&label=train&step=10", http.StatusOK, &eps)
	if len(eps.Episodes) != 6 || !eps.Decoded {
		t.Fatalf("%d episodes, decoded %v", len(eps.Episodes), eps.Decoded)
	}
	e := eps.Episodes[5]
	if e.Index != 5 || e.Group != 1 || e.Sample != 1 || e.Seed != 105 || e.Score != 9.8 || e.Success || e.Version != 10 ||
		e.Kept == nil || *e.Kept || e.Drift == nil || len(e.Messages) != 5 || len(e.Turns) != 2 {
		t.Fatalf("episode: %+v", e)
	}
	if m := e.Messages[4]; m.Role != "assistant" || m.Content != "<think>ok é</think><answer>Up</answer>" {
		t.Errorf("last message %q", m)
	}
	t0, t1 := e.Turns[0], e.Turns[1]
	if t0.Message != 2 || t0.Reward == nil || *t0.Reward != -0.1 || t0.RewardFromScore || t0.PromptTokens != 3 ||
		!slices.Equal(t0.Tokens, []string{"h", "i"}) || t0.LogProb[1] != nil || *t0.LogProb[0] != -0.1 {
		t.Errorf("first turn: %+v", t0)
	}
	if t1.Message != 4 || t1.Reward == nil || math.Abs(*t1.Reward-9.9) > 1e-12 || !t1.RewardFromScore ||
		!slices.Equal(t1.Tokens, []string{"", "é", "!"}) || t1.Advantage != nil {
		t.Errorf("last turn: %+v (reward %v)", t1, *t1.Reward)
	}
	if k := eps.Episodes[0]; k.Kept == nil || !*k.Kept || len(k.Turns[0].Advantage) != 2 || *k.Turns[0].OldLogProb[1] != -0.3 {
		t.Errorf("kept episode: %+v", k.Turns[0])
	}
	getJSON(t, h, "/api/episodes"+q+"&label=train&step=5", http.StatusNotFound, nil)
	getJSON(t, h, "/api/episodes"+q+"&label=../x&step=10", http.StatusBadRequest, nil)
	getJSON(t, h, "/api/episodes?run=/etc&label=train&step=10", http.StatusBadRequest, nil)

	// Without a tokenizer the replies keep their ids and text.
	var other EpisodesReply
	getJSON(t, h, "/api/transcripts?run="+url.QueryEscape(runs[1]), http.StatusOK, &list)
	getJSON(t, h, "/api/episodes?run="+url.QueryEscape(runs[1])+"&label=train&step=0", http.StatusOK, &other)
	if list.TokenizerError == "" || other.Decoded || other.Episodes[0].Turns[0].Tokens != nil || len(other.Episodes[0].Turns[0].IDs) != 2 {
		t.Errorf("no tokenizer: %+v, %+v", list, other.Episodes[0].Turns[0])
	}

	var sr SearchReply
	getJSON(t, h, "/api/search"+q+"&q=BOARD+3", http.StatusOK, &sr)
	if len(sr.Hits) != 5 || sr.More || sr.Hits[0].Episode != 3 || sr.Hits[0].Step != 0 || !strings.Contains(sr.Hits[0].Snippet, "board 3") {
		t.Errorf("search: %+v", sr)
	}
	getJSON(t, h, "/api/search"+q+"&q=+", http.StatusBadRequest, nil)

	rec := getJSON(t, h, "/api/collapse"+q+"&step=10", http.StatusOK, nil)
	var reading struct {
		Step     int `json:"step"`
		Matrices []struct {
			LSum [][]*float64 `json:"lsum"`
		} `json:"matrices"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &reading); err != nil || reading.Step != 10 || len(reading.Matrices[0].LSum) != 3 {
		t.Errorf("collapse reading: %v %+v", err, reading)
	}
	getJSON(t, h, "/api/collapse"+q+"&step=11", http.StatusNotFound, nil)
	getJSON(t, h, "/api/collapse"+q+"&step=x", http.StatusBadRequest, nil)
}

func TestPieces(t *testing.T) {
	bytesOf := func(id int) ([]byte, bool) {
		tokens := [][]byte{[]byte("a"), {0xe2, 0x82}, {0xac}, []byte("b"), {0xff}}
		if id < 0 || id >= len(tokens) {
			return nil, false
		}
		return tokens[id], true
	}
	got := pieces([]int{0, 1, 2, 3, 4, 9, 1}, bytesOf)
	want := []string{"a", "", "€", "b", "\uFFFD", "<9>", "\uFFFD"}
	if !slices.Equal(got, want) {
		t.Errorf("pieces = %q, want %q", got, want)
	}
}

func TestSummary(t *testing.T) {
	_, runs := study(t)
	h := newServer(t, runs...).Handler()
	var sum SummaryReply
	getJSON(t, h, "/api/summary?run="+url.QueryEscape(runs[0]), http.StatusOK, &sum)
	for _, want := range []string{"run finished after 40 of 40 steps, 1m40s (warm start 20s)",
		"validation success on 64 held-out levels × 2 episodes (95% interval):",
		"  random policy      0.170  [0.110, 0.250]", "  final (step 40)    0.900  [0.840, 0.940]"} {
		if !strings.Contains(sum.Text, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum.Text)
		}
	}
	if sum.Status != "finished" || !strings.Contains(sum.Config, "steps: 40") || !bytes.Contains(sum.Identity, []byte(`"algo.lr":"0.001"`)) ||
		!bytes.Contains(sum.Summary, []byte(`"status":"finished"`)) {
		t.Errorf("summary reply: %+v", sum)
	}
	// A run without a summary: its progress, from the metrics.
	getJSON(t, h, "/api/summary?run="+url.QueryEscape(runs[3]), http.StatusOK, &sum)
	lo, hi := stats.Wilson(0.9, 128)
	for _, want := range []string{"running: step 40 of 40", "  warm start         0.600", fmt.Sprintf("  latest (step 40)   0.900  [%.3f, %.3f]", lo, hi)} {
		if !strings.Contains(sum.Text, want) {
			t.Errorf("progress lacks %q:\n%s", want, sum.Text)
		}
	}
	if string(sum.Summary) != "null" {
		t.Errorf("unfinished run's summary %s", sum.Summary)
	}
}

func TestAPIKey(t *testing.T) {
	_, runs := study(t)
	s, err := New(runs[:1], Options{APIKey: "sekrit"})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	getJSON(t, h, "/api/runs", http.StatusUnauthorized, nil)
	getJSON(t, h, "/?key=wrong", http.StatusUnauthorized, nil)
	rec := getJSON(t, h, "/?key=sekrit", http.StatusOK, nil)
	cookies := rec.Result().Cookies()
	if len(cookies) != 1 || !cookies[0].HttpOnly {
		t.Fatalf("cookies %v", cookies)
	}
	req := httptest.NewRequest(http.MethodGet, "/api/runs", nil)
	req.AddCookie(cookies[0])
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("with the cookie: %d", rec.Code)
	}
	req = httptest.NewRequest(http.MethodGet, "/api/runs", nil)
	req.Header.Set("Authorization", "Bearer sekrit")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("with the bearer token: %d", rec.Code)
	}
}

func TestPageAndAssets(t *testing.T) {
	_, runs := study(t)
	h := newServer(t, runs[0]).Handler()
	rec := getJSON(t, h, "/", http.StatusOK, nil)
	for _, want := range append([]string{`href="static/view.css"`}, scripts...) {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, name := range append([]string{"view.css"}, scripts...) {
		rec := getJSON(t, h, "/static/"+name, http.StatusOK, nil)
		// Inlined in an export, an asset must not end its element early.
		if b := bytes.ToLower(rec.Body.Bytes()); bytes.Contains(b, []byte("</script")) || bytes.Contains(b, []byte("</style")) {
			t.Errorf("%s holds a closing tag", name)
		}
		if text := strings.ReplaceAll(rec.Body.String(), "http://www.w3.org/2000/svg", ""); strings.Contains(text, "http://") || strings.Contains(text, "https://") {
			t.Errorf("%s refers to the network", name)
		}
	}
	getJSON(t, h, "/nothing", http.StatusNotFound, nil)
}

func TestExport(t *testing.T) {
	dir, runs := study(t)
	s := newServer(t, dir)
	var b bytes.Buffer
	if err := s.Export(&b, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, `src="static/`) || strings.Contains(page, `href="static/`) {
		t.Error("the export links assets instead of inlining them")
	}
	start := strings.Index(page, `<script id="view-data" type="application/json">`)
	end := strings.Index(page[start:], "</script>")
	if start < 0 || end < 0 {
		t.Fatal("no inlined data")
	}
	var data exportData
	if err := json.Unmarshal([]byte(page[start+len(`<script id="view-data" type="application/json">`):start+end]), &data); err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	for _, key := range []string{"/api/runs", "/api/series?metric=val-env/success", "/api/summary?run=" + runs[3],
		"/api/transcripts?run=" + runs[0], "/api/episodes?label=train&run=" + runs[0] + "&step=40", "/api/collapse?run=" + runs[1] + "&step=10"} {
		got, ok := data.Replies[key]
		if !ok {
			t.Errorf("the export lacks %s", key)
			continue
		}
		// The reply is the server's.
		path, query, _ := strings.Cut(key, "?")
		vals, _ := url.ParseQuery(strings.ReplaceAll(query, "/", "%2F"))
		rec := getJSON(t, h, path+"?"+vals.Encode(), http.StatusOK, nil)
		var x, y any
		json.Unmarshal(got, &x)
		json.Unmarshal(rec.Body.Bytes(), &y)
		if fmt.Sprint(x) != fmt.Sprint(y) {
			t.Errorf("%s: the export's reply differs from the server's", key)
		}
	}
	if replyKey("/api/episodes", map[string]string{"step": "4", "run": "r", "label": "val"}) != "/api/episodes?label=val&run=r&step=4" {
		t.Error("replyKey does not sort the parameters")
	}
	b.Reset()
	if err := s.Export(&b, ExportOptions{CurvesOnly: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "/api/episodes?") || !strings.Contains(b.String(), `"curves_only":true`) {
		t.Error("a curves-only export holds transcripts")
	}
}

func TestEvents(t *testing.T) {
	_, runs := study(t)
	s := newServer(t, runs...)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(s.Close)
	res, err := http.Get(ts.URL + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- data
			}
		}
		close(events)
	}()
	time.Sleep(100 * time.Millisecond)
	appendTo(t, filepath.Join(runs[2], "metrics.jsonl"), "{\"step\":41,\"train/success\":1}\n")
	select {
	case data := <-events:
		var ev ChangeEvent
		if err := json.Unmarshal([]byte(data), &ev); err != nil || !slices.Equal(ev.Runs, []string{runs[2]}) || ev.List {
			t.Errorf("event %s: %+v %v", data, ev, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no change event after a row was appended")
	}
	// Close ends the stream, so that a server can shut down.
	s.Close()
	select {
	case _, open := <-events:
		if open {
			t.Error("an event after Close")
		}
	case <-time.After(5 * time.Second):
		t.Error("the stream outlived Close")
	}
}

func TestInvalidTurns(t *testing.T) {
	// The warnings of package rollout's two prompt styles, after the
	// first reply; the second reply's validity is not known.
	text := "=== group 0 sample 1 seed 7: score -0.30 success false actions 1 policy p version 3\n" +
		"--- user\nTurn 1, 3 actions left.\n--- assistant\n<answer>Jump</answer>\n" +
		"--- user\nReward: -0.1\nNo valid action.\nTurn 2, 3 actions left.\n--- assistant\n<answer>Up</answer>\n\n" +
		"=== group 0 sample 2 seed 7: score 1.00 success true actions 2 policy p version 3\n" +
		"--- user\n\nTurn 1:\nState:\n#P#\n--- assistant\n<answer>Fly</answer>\n" +
		"--- user\nReward:\n0\n\nTurn 2:\nState:\n#P#\nNo valid action provided previously. Environment state remains the same. Please try again.\n" +
		"--- assistant\n<answer>Up</answer>\n" +
		"--- user\nReward:\n1\n\nTurn 3:\nState:\n#_#\n--- assistant\n<answer>Up</answer>\n"
	eps := parseTranscript([]byte(text))
	if len(eps) != 2 {
		t.Fatalf("%d episodes", len(eps))
	}
	for i, want := range [][]bool{{true, false}, {true, false, false}} {
		var got []bool
		for _, turn := range eps[i].Turns {
			got = append(got, turn.Invalid)
		}
		if !slices.Equal(got, want) || eps[i].InvalidTurns != 1 {
			t.Errorf("episode %d: invalid turns %v (%d), want %v", i, got, eps[i].InvalidTurns, want)
		}
	}
	if r := eps[1].Turns[1].Reward; r == nil || *r != 1 {
		t.Errorf("second reply's reward %v, want 1", r)
	}
}
