package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ExportOptions choose what Export inlines.
type ExportOptions struct {
	// CurvesOnly leaves out the transcripts and the collapse readings:
	// the curves and summaries of a study of many runs, in a smaller file.
	CurvesOnly bool
}

// exportData is what an exported page carries in place of a server: the
// replies of every request the page can make, by replyKey.
type exportData struct {
	Exported   string                     `json:"exported"`
	CurvesOnly bool                       `json:"curves_only"`
	Replies    map[string]json.RawMessage `json:"replies"`
}

// replyKey names a request in an export: the path, then the parameters
// sorted by name, unescaped ("/api/series?metric=val-env/success"). The
// page builds the same keys.
func replyKey(path string, params map[string]string) string {
	if len(params) == 0 {
		return path
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + params[k]
	}
	return path + "?" + strings.Join(parts, "&")
}

// Export writes the view as one HTML file that needs no server: the page,
// its styles and scripts, and the replies to every request it can make
// (the runs, every metric, each run's summary, transcripts and collapse
// readings) inlined as JSON.
func (s *Server) Export(w io.Writer, opts ExportOptions) error {
	data := exportData{Exported: time.Now().UTC().Format(time.RFC3339), CurvesOnly: opts.CurvesOnly, Replies: map[string]json.RawMessage{}}
	get := func(path string, params map[string]string) ([]byte, error) {
		q := url.Values{}
		for k, v := range params {
			q.Set(k, v)
		}
		req, err := http.NewRequest(http.MethodGet, path+"?"+q.Encode(), nil)
		if err != nil {
			return nil, err
		}
		rec := &recorder{header: http.Header{}, status: http.StatusOK}
		s.mux.ServeHTTP(rec, req)
		if rec.status != http.StatusOK {
			return nil, fmt.Errorf("%s: %s", replyKey(path, params), strings.TrimSpace(rec.body.String()))
		}
		data.Replies[replyKey(path, params)] = rec.body.Bytes()
		return rec.body.Bytes(), nil
	}
	raw, err := get("/api/runs", nil)
	if err != nil {
		return err
	}
	var runs RunsReply
	if err := json.Unmarshal(raw, &runs); err != nil {
		return err
	}
	for _, m := range runs.Metrics {
		if _, err := get("/api/series", map[string]string{"metric": m}); err != nil {
			return err
		}
	}
	for _, r := range runs.Runs {
		if _, err := get("/api/summary", map[string]string{"run": r.ID}); err != nil {
			return err
		}
		if opts.CurvesOnly {
			continue
		}
		raw, err := get("/api/transcripts", map[string]string{"run": r.ID})
		if err != nil {
			return err
		}
		var tr TranscriptsReply
		if err := json.Unmarshal(raw, &tr); err != nil {
			return err
		}
		for _, f := range tr.Files {
			if _, err := get("/api/episodes", map[string]string{"run": r.ID, "label": f.Label, "step": strconv.Itoa(f.Step)}); err != nil {
				return err
			}
		}
		for _, step := range tr.Collapse {
			if _, err := get("/api/collapse", map[string]string{"run": r.ID, "step": strconv.Itoa(step)}); err != nil {
				return err
			}
		}
	}
	blob, err := json.Marshal(data)
	if err != nil {
		return err
	}
	title := "agentrl view"
	if len(runs.Runs) == 1 {
		title += ": " + runs.Runs[0].Name
	}
	page, err := renderPage(title, true, blob)
	if err != nil {
		return err
	}
	_, err = w.Write(page)
	return err
}

// recorder is an in-memory http.ResponseWriter: Export asks the server's
// own handlers for its replies.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(status int)      { r.status = status }
