package view

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// maxHits bounds the hits of one search.
const maxHits = 200

// Hit is an episode whose messages hold the searched text.
type Hit struct {
	Label   string  `json:"label"`
	Step    int     `json:"step"`
	Episode int     `json:"episode"`
	Group   int     `json:"group"`
	Sample  int     `json:"sample"`
	Score   float64 `json:"score"`
	Success bool    `json:"success"`
	// Snippet is the text around the first match.
	Snippet string `json:"snippet"`
}

// SearchReply is the reply of /api/search.
type SearchReply struct {
	Run   string `json:"run"`
	Query string `json:"query"`
	Hits  []Hit  `json:"hits"`
	// More says there were more than the hits listed.
	More bool `json:"more"`
}

// search finds the episodes of every transcript of the run whose messages
// contain query, ignoring case.
func (r *run) search(query string) (SearchReply, error) {
	out := SearchReply{Run: r.dir, Query: query, Hits: []Hit{}}
	files, _, err := r.listTranscripts()
	if err != nil {
		return out, err
	}
	needle := strings.ToLower(query)
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(r.dir, transcripts, fmt.Sprintf("%s-step%05d.txt", f.Label, f.Step)))
		if err != nil {
			continue // removed since the listing (a resumed run trims)
		}
		for _, ep := range parseTranscript(data) {
			for _, m := range ep.Messages {
				i := strings.Index(strings.ToLower(m.Content), needle)
				if i < 0 {
					continue
				}
				if len(out.Hits) == maxHits {
					out.More = true
					return out, nil
				}
				out.Hits = append(out.Hits, Hit{Label: f.Label, Step: f.Step, Episode: ep.Index, Group: ep.Group, Sample: ep.Sample,
					Score: ep.Score, Success: ep.Success, Snippet: snippet(m.Content, i, len(needle))})
				break
			}
		}
	}
	return out, nil
}

// snippet is the text around content[i:i+n], on one line.
func snippet(content string, i, n int) string {
	lo, hi := max(0, i-40), min(len(content), i+n+40)
	for lo > 0 && !utf8.RuneStart(content[lo]) {
		lo--
	}
	for hi < len(content) && !utf8.RuneStart(content[hi]) {
		hi++
	}
	s := strings.Join(strings.Fields(content[lo:hi]), " ")
	if lo > 0 {
		s = "…" + s
	}
	if hi < len(content) {
		s += "…"
	}
	return s
}

func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	run, err := s.run(q.Get("run"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	query := q.Get("q")
	if strings.TrimSpace(query) == "" {
		s.fail(w, r, fmt.Errorf("%w: give ?q=TEXT", errBadRequest))
		return
	}
	out, err := run.search(query)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.reply(w, r, out)
}
