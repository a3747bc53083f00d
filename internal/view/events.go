package view

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/agentrl/agentrl/internal/metricsfile"
)

// heartbeat is how often an idle event stream sends a comment, so that
// proxies and browsers keep it open.
const heartbeat = 15 * time.Second

// stamps fingerprint each run's files that change as it trains: the
// metrics file's size and time, the summary's time, and the transcripts
// directory's time (a new transcript or collapse reading).
func (s *Server) stamps() map[string]string {
	dirs, _ := s.scan(false)
	out := make(map[string]string, len(dirs))
	for _, d := range dirs {
		var stamp string
		for _, name := range []string{metricsfile.Name, summaryFile, transcripts} {
			if st, err := os.Stat(filepath.Join(d, name)); err == nil {
				stamp += fmt.Sprintf("%d.%d;", st.Size(), st.ModTime().UnixNano())
			} else {
				stamp += "-;"
			}
		}
		out[d] = stamp
	}
	return out
}

// ChangeEvent is the data of a "change" event of /api/events.
type ChangeEvent struct {
	// Runs are the runs whose files changed; a run that appeared or
	// went away changes the list of runs.
	Runs []string `json:"runs"`
	// List says that runs appeared or went away.
	List bool `json:"list"`
}

// handleEvents streams server-sent events: a "change" event whenever a
// run's files change, checked every Options.Poll.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	if rc.Flush() != nil {
		return
	}
	last := s.stamps()
	tick := time.NewTicker(s.opts.Poll)
	defer tick.Stop()
	quiet := time.Now()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-tick.C:
		}
		cur := s.stamps()
		ev := ChangeEvent{Runs: []string{}}
		for d, st := range cur {
			if old, ok := last[d]; !ok || old != st {
				ev.Runs = append(ev.Runs, d)
			}
			if _, ok := last[d]; !ok {
				ev.List = true
			}
		}
		for d := range last {
			if _, ok := cur[d]; !ok {
				ev.List = true
			}
		}
		last = cur
		switch {
		case len(ev.Runs) > 0 || ev.List:
			data, _ := json.Marshal(ev)
			fmt.Fprintf(w, "event: change\ndata: %s\n\n", data)
		case time.Since(quiet) > heartbeat:
			fmt.Fprint(w, ": still here\n\n")
		default:
			continue
		}
		quiet = time.Now()
		if rc.Flush() != nil {
			return
		}
	}
}
