package view

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
)

// collapseFile is the file of a step's collapse reading (written by
// package train): per sampling scheme, the cross-scoring matrix, the rows'
// reasoning and the columns' prompts, and the reading's metrics.
func collapseFile(dir string, step int) string {
	return filepath.Join(dir, transcripts, fmt.Sprintf("collapse-step%05d.json", step))
}

// handleCollapse answers with a collapse reading's file as it is.
func (s *Server) handleCollapse(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	run, err := s.run(q.Get("run"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	step, err := strconv.Atoi(q.Get("step"))
	if err != nil || step < 0 {
		s.fail(w, r, fmt.Errorf("%w: give ?step=N", errBadRequest))
		return
	}
	data, err := os.ReadFile(collapseFile(run.dir, step))
	if errors.Is(err, fs.ErrNotExist) {
		err = fmt.Errorf("%w: no collapse reading at step %d", errNotFound, step)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(data)
}
