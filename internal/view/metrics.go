package view

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
)

// series is one metric of one run: the steps that logged a finite value
// and the values.
type series struct {
	steps  []int
	values []float64
}

// metricsCache holds a run's metrics.jsonl by metric, and where reading
// stopped: a file that grew is read from there on, a file replaced or cut
// (a resumed run trims the rows its interrupted session wrote) from the
// start.
type metricsCache struct {
	info     os.FileInfo
	offset   int64 // bytes of whole lines parsed
	rows     int
	lastStep int
	cols     map[string]*series
	pairs    []pair            // scratch
	keys     map[string]string // the names seen, interned
}

func (m *metricsCache) reset() {
	*m = metricsCache{cols: map[string]*series{}, keys: map[string]string{}, lastStep: -1}
}

// refresh reads what the file at path holds beyond what was read.
func (m *metricsCache) refresh(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		if os.IsNotExist(err) {
			m.reset()
			return nil
		}
		return err
	}
	if m.cols == nil || m.info == nil || !os.SameFile(m.info, st) || st.Size() < m.offset {
		m.reset()
	}
	m.info = st
	if st.Size() == m.offset {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(m.offset, io.SeekStart); err != nil {
		return err
	}
	data := make([]byte, st.Size()-m.offset)
	n, err := io.ReadFull(f, data)
	if err != nil && err != io.ErrUnexpectedEOF {
		return err
	}
	data = data[:n]
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break // a line being written: read it once whole
		}
		m.addLine(data[:i])
		m.offset += int64(i + 1)
		data = data[i+1:]
	}
	return nil
}

// addLine adds one metrics row; a line that is not one is skipped.
func (m *metricsCache) addLine(line []byte) {
	pairs, ok := m.scanRow(line, m.pairs[:0])
	if !ok {
		pairs = decodeRow(line, pairs[:0])
	}
	m.pairs = pairs[:0]
	step, found := 0.0, false
	for _, p := range pairs {
		if p.key == "step" && !math.IsNaN(p.value) {
			step, found = p.value, true
		}
	}
	if !found {
		return
	}
	s := int(step)
	m.rows++
	m.lastStep = max(m.lastStep, s)
	for _, p := range pairs {
		if p.key == "step" || math.IsNaN(p.value) || math.IsInf(p.value, 0) {
			continue
		}
		col := m.cols[p.key]
		if col == nil {
			col = &series{}
			m.cols[p.key] = col
		}
		col.steps = append(col.steps, s)
		col.values = append(col.values, p.value)
	}
}

// pair is one metric of a row; a null value is NaN.
type pair struct {
	key   string
	value float64
}

// decodeRow reads a row with encoding/json: what scanRow leaves to it.
func decodeRow(line []byte, out []pair) []pair {
	var row map[string]*float64
	if json.Unmarshal(line, &row) != nil {
		return out
	}
	for k, v := range row {
		if v == nil {
			out = append(out, pair{k, math.NaN()})
		} else {
			out = append(out, pair{k, *v})
		}
	}
	return out
}

// scanRow reads a row as package train writes it, a flat JSON object of
// numbers and nulls, several times faster than encoding/json; it reports
// false for anything else (escaped keys, nested values, malformed text),
// which decodeRow then reads.
func (m *metricsCache) scanRow(line []byte, out []pair) ([]pair, bool) {
	i, n := 0, len(line)
	skip := func() {
		for i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n') {
			i++
		}
	}
	skip()
	if i == n || line[i] != '{' {
		return out, false
	}
	i++
	skip()
	if i < n && line[i] == '}' {
		i++
		skip()
		return out, i == n
	}
	for {
		if i == n || line[i] != '"' {
			return out, false
		}
		start := i + 1
		end := bytes.IndexByte(line[start:], '"')
		if end < 0 {
			return out, false
		}
		key := line[start : start+end]
		if bytes.IndexByte(key, '\\') >= 0 {
			return out, false
		}
		i = start + end + 1
		skip()
		if i == n || line[i] != ':' {
			return out, false
		}
		i++
		skip()
		vstart := i
		for i < n && valueByte[line[i]] {
			i++
		}
		raw := line[vstart:i]
		var v float64
		if string(raw) == "null" {
			v = math.NaN()
		} else {
			f, err := strconv.ParseFloat(string(raw), 64)
			if err != nil {
				return out, false
			}
			v = f
		}
		out = append(out, pair{m.intern(key), v})
		skip()
		if i == n {
			return out, false
		}
		switch line[i] {
		case ',':
			i++
			skip()
		case '}':
			i++
			skip()
			return out, i == n
		default:
			return out, false
		}
	}
}

// valueByte marks the bytes of a number or null.
var valueByte = func() (t [256]bool) {
	for _, c := range []byte("+-0123456789.eEnul") {
		t[c] = true
	}
	return t
}()

// intern returns b as a string, one string per name: every row repeats
// the names.
func (m *metricsCache) intern(b []byte) string {
	if s, ok := m.keys[string(b)]; ok {
		return s
	}
	s := string(b)
	m.keys[s] = s
	return s
}

// names returns the metrics logged, sorted.
func (m *metricsCache) names() []string {
	out := make([]string, 0, len(m.cols))
	for k := range m.cols {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
