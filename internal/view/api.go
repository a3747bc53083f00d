package view

import (
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/agentrl/agentrl/internal/httpapi"
	"github.com/agentrl/agentrl/internal/metricsfile"
	"github.com/agentrl/agentrl/internal/report"
	"github.com/agentrl/agentrl/internal/stats"
)

// RunInfo is one run in the reply of /api/runs.
type RunInfo struct {
	// ID is the run directory, as the server found it; requests about
	// the run name it.
	ID string `json:"id"`
	// Name is the directory relative to the one all runs share.
	Name string `json:"name"`
	// Arm is the index of the run's arm in RunsReply.Arms.
	Arm  int    `json:"arm"`
	Seed string `json:"seed,omitempty"`
	Env  string `json:"env,omitempty"`
	// Status is the summary's status ("finished", "stopped early: …",
	// "interrupted"), "running" while metrics rows keep coming, or
	// "stopped" for a run that ended without a summary.
	Status string `json:"status"`
	Live   bool   `json:"live"`
	// Rows is the number of metrics rows, LastStep the last step logged
	// (-1: none) and Steps the steps the run is set to (run.steps).
	Rows     int `json:"rows"`
	LastStep int `json:"last_step"`
	Steps    int `json:"steps,omitempty"`
	// ValEpisodes is the number of episodes behind each validation
	// success rate (validation levels × samples).
	ValEpisodes int `json:"val_episodes,omitempty"`
}

// ArmInfo is a set of runs that differ only in run.seed (see
// report.Arms), labelled by the settings in which it differs from the
// other arms.
type ArmInfo struct {
	Label string   `json:"label"`
	Runs  []string `json:"runs"`
}

// RunsReply is the reply of /api/runs.
type RunsReply struct {
	Runs []RunInfo `json:"runs"`
	Arms []ArmInfo `json:"arms"`
	// Metrics are the names of every metric any run logged, sorted.
	Metrics []string `json:"metrics"`
}

// RunSeries is one run's values of a metric.
type RunSeries struct {
	Run    string    `json:"run"`
	Steps  []int     `json:"steps"`
	Values []float64 `json:"values"`
	// Low and High bound the 95% Wilson interval of each value of a
	// validation success rate over Episodes episodes.
	Low      []float64 `json:"lo,omitempty"`
	High     []float64 `json:"hi,omitempty"`
	Episodes int       `json:"episodes,omitempty"`
}

// SeriesReply is the reply of /api/series: the metric of every run that
// logged it.
type SeriesReply struct {
	Metric string      `json:"metric"`
	Runs   []RunSeries `json:"runs"`
}

// isValidationRate reports whether metric is a success rate measured on
// the validation episodes, which gets intervals.
func isValidationRate(metric string) bool {
	return strings.HasPrefix(metric, "val-env/") && strings.HasSuffix(metric, "success")
}

// fail answers a failed request with its error as text.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, errUnknownRun), errors.Is(err, errBadRequest):
		code = http.StatusBadRequest
	case errors.Is(err, errNotFound):
		code = http.StatusNotFound
	default:
		s.opts.Logger.Warn("view request failed", "path", r.URL.Path, "query", r.URL.RawQuery, "err", err)
	}
	http.Error(w, err.Error(), code)
}

var (
	errBadRequest = errors.New("bad request")
	errNotFound   = errors.New("not found")
)

func (s *Server) reply(w http.ResponseWriter, r *http.Request, v any) {
	if err := httpapi.WriteJSON(w, http.StatusOK, v); err != nil {
		s.fail(w, r, err)
	}
}

// refresh reads what the runs' metrics files appended, a few runs at a
// time.
func refresh(runs []*run) error {
	errs := make([]error, len(runs))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(len(runs), runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for i := range work {
				r := runs[i]
				r.mu.Lock()
				errs[i] = r.metrics.refresh(filepath.Join(r.dir, metricsfile.Name))
				r.mu.Unlock()
			}
		})
	}
	for i := range runs {
		work <- i
	}
	close(work)
	wg.Wait()
	return errors.Join(errs...)
}

// runsReply lists the runs, their arms and the metrics they logged.
func (s *Server) runsReply() (RunsReply, error) {
	runs, err := s.all()
	if err != nil {
		return RunsReply{}, err
	}
	if err := refresh(runs); err != nil {
		return RunsReply{}, err
	}
	dirs := make([]string, len(runs))
	reps := make([]report.Run, len(runs))
	out := RunsReply{Runs: make([]RunInfo, len(runs)), Arms: []ArmInfo{}, Metrics: []string{}}
	metrics := map[string]bool{}
	for i, r := range runs {
		dirs[i] = r.dir
		r.mu.Lock()
		settings := r.settings()
		info := RunInfo{ID: r.dir, Seed: settings["run.seed"], Env: settings["env.name"],
			Rows: r.metrics.rows, LastStep: r.metrics.lastStep, ValEpisodes: r.valEpisodes()}
		info.Status, info.Live = r.state()
		if c, ok := r.config.get(filepath.Join(r.dir, configFile)); ok {
			info.Steps = c.Run.Steps
			if info.Env == "" {
				info.Env = c.Env.Name
			}
		}
		for k := range r.metrics.cols {
			metrics[k] = true
		}
		r.mu.Unlock()
		reps[i] = report.Run{Dir: r.dir, Config: settings}
		out.Runs[i] = info
	}
	for i, n := range names(dirs) {
		out.Runs[i].Name = n
	}
	index := map[string]int{}
	for i, r := range out.Runs {
		index[r.ID] = i
	}
	for a, arm := range report.Arms(reps) {
		info := ArmInfo{Label: arm.Label}
		for _, r := range arm.Runs {
			info.Runs = append(info.Runs, r.Dir)
			out.Runs[index[r.Dir]].Arm = a
		}
		out.Arms = append(out.Arms, info)
	}
	for k := range metrics {
		out.Metrics = append(out.Metrics, k)
	}
	slices.Sort(out.Metrics)
	return out, nil
}

func (s *Server) handleRuns(w http.ResponseWriter, r *http.Request) {
	out, err := s.runsReply()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.reply(w, r, out)
}

// seriesReply collects metric from every run that logged it.
func (s *Server) seriesReply(metric string) (SeriesReply, error) {
	runs, err := s.all()
	if err != nil {
		return SeriesReply{}, err
	}
	if err := refresh(runs); err != nil {
		return SeriesReply{}, err
	}
	out := SeriesReply{Metric: metric, Runs: []RunSeries{}}
	for _, r := range runs {
		r.mu.Lock()
		col := r.metrics.cols[metric]
		if col == nil {
			r.mu.Unlock()
			continue
		}
		rs := RunSeries{Run: r.dir, Steps: slices.Clone(col.steps), Values: slices.Clone(col.values)}
		if n := r.valEpisodes(); n > 0 && isValidationRate(metric) {
			rs.Episodes = n
			for _, v := range rs.Values {
				lo, hi := stats.Wilson(v, n)
				rs.Low, rs.High = append(rs.Low, lo), append(rs.High, hi)
			}
		}
		r.mu.Unlock()
		out.Runs = append(out.Runs, rs)
	}
	return out, nil
}

func (s *Server) handleSeries(w http.ResponseWriter, r *http.Request) {
	metric := r.URL.Query().Get("metric")
	if metric == "" {
		s.fail(w, r, errors.Join(errBadRequest, errors.New("give ?metric=NAME")))
		return
	}
	out, err := s.seriesReply(metric)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.reply(w, r, out)
}

// SummaryReply is the reply of /api/summary: what a run directory says
// of the run as a whole.
type SummaryReply struct {
	Run string `json:"run"`
	// Config is config.yaml, the resolved config.
	Config string `json:"config_yaml"`
	// Identity is run.json (null when missing).
	Identity json.RawMessage `json:"identity"`
	// Summary is summary.json (null while the run has none).
	Summary json.RawMessage `json:"summary"`
	// Text is the summary as the console prints it at the end of a run,
	// or the same read from the metrics so far for a run without a
	// current summary.
	Text   string `json:"text"`
	Status string `json:"status"`
}

func (s *Server) handleSummary(w http.ResponseWriter, r *http.Request) {
	run, err := s.run(r.URL.Query().Get("run"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out, err := run.summaryReply()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.reply(w, r, out)
}
