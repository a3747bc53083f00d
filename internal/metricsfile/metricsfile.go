// Package metricsfile reads a run directory's metrics.jsonl, the file a
// training run writes one JSON object per step into (package train) and
// the tools that compare runs read (internal/report, trainer plot).
package metricsfile

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// Name is the metrics file's name inside a run directory.
const Name = "metrics.jsonl"

// Read reads the metrics file of the run directory dir: one map per line.
func Read(dir string) ([]map[string]float64, error) {
	f, err := os.Open(filepath.Join(dir, Name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Decode(f)
}

// Decode reads metrics rows, one JSON object per line; null values (JSON
// has no NaN) become NaN and blank lines are skipped. On a malformed line
// it returns the rows before it and an error naming the line.
func Decode(r io.Reader) ([]map[string]float64, error) {
	var out []map[string]float64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var raw map[string]*float64
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			return out, fmt.Errorf("%s line %d: %w", Name, line, err)
		}
		m := make(map[string]float64, len(raw))
		for k, v := range raw {
			if v == nil {
				m[k] = math.NaN()
			} else {
				m[k] = *v
			}
		}
		out = append(out, m)
	}
	return out, sc.Err()
}
