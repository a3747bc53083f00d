// Package view serves a web view of training run directories: curves of
// any metric (smoothed, runs that differ only in their seed drawn as one
// band, validation points with their 95% intervals, the collapse alarm's
// regimes), the sample transcripts with each reply token coloured by the
// log-prob it was sampled with, its advantage or the train–inference
// mismatch, the collapse readings' cross-scoring matrices as heatmaps, and
// each run's config and summary. `trainer view` serves it; Export writes
// the same page as one HTML file with its data inlined.
//
// The page is plain HTML, CSS and JavaScript embedded in the binary; it
// asks the server for JSON (the /api/ endpoints of Handler) and listens to
// /api/events for changes of the runs' files, so a running run's view
// updates as it trains.
package view

import (
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Options configure a Server.
type Options struct {
	// APIKey, when not empty, is required on every request: as a bearer
	// token, or as the "key" query parameter (which sets a cookie for the
	// page's later requests), or that cookie.
	APIKey string
	// Poll is how often /api/events looks for changed run files
	// (default 1s).
	Poll time.Duration
	// Logger logs the requests that fail; nil discards.
	Logger *slog.Logger
}

// Server serves the view of the run directories that its patterns name.
// It reads the files when asked, keeping each run's parsed metrics and
// reading only what a growing metrics file appended since.
type Server struct {
	patterns []string
	opts     Options
	mux      *http.ServeMux

	mu      sync.Mutex
	runs    map[string]*run // by directory
	dirs    []string        // the directories of the last scan, sorted
	scanned time.Time

	done      chan struct{}
	closeOnce sync.Once
}

// New returns a server for the run directories that patterns name: run
// directories, glob patterns, or directories with run directories below
// them (a study's). It fails when they name no run directory.
func New(patterns []string, opts Options) (*Server, error) {
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{patterns: patterns, opts: opts, runs: map[string]*run{}, done: make(chan struct{})}
	if _, err := s.scan(true); err != nil {
		return nil, err
	}
	s.mux = http.NewServeMux()
	s.routes()
	// Read the metrics now, while the page is being opened.
	go func() {
		if runs, err := s.all(); err == nil {
			refresh(runs)
		}
	}()
	return s, nil
}

// Runs returns the run directories the server shows.
func (s *Server) Runs() []string {
	dirs, _ := s.scan(false)
	return dirs
}

// Close ends the event streams of the pages that are open, so that a
// server shutting down need not wait for them.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.done) })
}

// Handler returns the server's HTTP handler: the page at /, its assets
// under /static/, and the JSON endpoints under /api/.
func (s *Server) Handler() http.Handler {
	if s.opts.APIKey == "" {
		return s.mux
	}
	return s.requireKey(s.mux)
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET /{$}", s.handleIndex)
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.HandlerFunc(s.handleStatic)))
	s.mux.HandleFunc("GET /api/runs", s.handleRuns)
	s.mux.HandleFunc("GET /api/series", s.handleSeries)
	s.mux.HandleFunc("GET /api/summary", s.handleSummary)
	s.mux.HandleFunc("GET /api/transcripts", s.handleTranscripts)
	s.mux.HandleFunc("GET /api/episodes", s.handleEpisodes)
	s.mux.HandleFunc("GET /api/search", s.handleSearch)
	s.mux.HandleFunc("GET /api/collapse", s.handleCollapse)
	s.mux.HandleFunc("GET /api/events", s.handleEvents)
}

// keyCookie holds the API key for the page's requests after the first.
const keyCookie = "agentrl_view_key"

// requireKey lets through the requests that carry the API key.
func (s *Server) requireKey(h http.Handler) http.Handler {
	want := []byte(s.opts.APIKey)
	ok := func(got string) bool { return got != "" && subtle.ConstantTimeCompare([]byte(got), want) == 1 }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if k := r.URL.Query().Get("key"); ok(k) {
			http.SetCookie(w, &http.Cookie{Name: keyCookie, Value: k, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			h.ServeHTTP(w, r)
			return
		}
		if bearer, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found && ok(bearer) {
			h.ServeHTTP(w, r)
			return
		}
		if c, err := r.Cookie(keyCookie); err == nil && ok(c.Value) {
			h.ServeHTTP(w, r)
			return
		}
		http.Error(w, "this view needs its API key: open the URL trainer view printed (?key=…), or send it as a bearer token", http.StatusUnauthorized)
	})
}
