package native

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
)

// NamedTensor is a float32 tensor as stored in a safetensors file.
type NamedTensor struct {
	Name  string
	Shape []int
	Data  []float32 // row-major, len = product of Shape
}

// maxHeaderBytes bounds the JSON header we accept (the reference
// implementation uses the same 100 MB limit).
const maxHeaderBytes = 100 << 20

type stEntry struct {
	Dtype       string   `json:"dtype"`
	Shape       []int    `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// WriteSafetensors writes tensors in the safetensors format: an 8-byte
// little-endian header length, a JSON header mapping each name to its dtype
// ("F32"), shape and [begin, end) byte offsets into the data section (plus an
// optional "__metadata__" string map), padded with spaces to a multiple of 8
// bytes, then the raw little-endian data in the order given.
func WriteSafetensors(w io.Writer, tensors []NamedTensor, metadata map[string]string) error {
	header := make(map[string]any, len(tensors)+1)
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	var off int64
	for _, t := range tensors {
		if t.Name == "" || t.Name == "__metadata__" {
			return fmt.Errorf("native: safetensors: invalid tensor name %q", t.Name)
		}
		if _, dup := header[t.Name]; dup {
			return fmt.Errorf("native: safetensors: duplicate tensor %q", t.Name)
		}
		n, err := numel(t.Shape)
		if err != nil || n != len(t.Data) {
			return fmt.Errorf("native: safetensors: tensor %q has shape %v but %d values", t.Name, t.Shape, len(t.Data))
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		header[t.Name] = stEntry{Dtype: "F32", Shape: shape, DataOffsets: [2]int64{off, off + 4*int64(n)}}
		off += 4 * int64(n)
	}
	js, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("native: safetensors: %w", err)
	}
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(js)))
	bw.Write(lenBuf[:])
	bw.Write(js)
	var b [4]byte
	for _, t := range tensors {
		for _, x := range t.Data {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(x))
			bw.Write(b[:])
		}
	}
	return bw.Flush()
}

func numel(shape []int) (int, error) {
	n := 1
	for _, s := range shape {
		if s < 0 || (s > 0 && n > math.MaxInt32/s) {
			return 0, fmt.Errorf("bad shape %v", shape)
		}
		n *= s
	}
	return n, nil
}

// ReadSafetensors parses a safetensors file held in memory. It accepts only
// F32 tensors and checks that the header fits, parses, has no duplicate
// names, that every shape matches its byte range, and that the ranges tile
// the data section exactly (start at 0, contiguous, no gaps or overlaps, end
// at the end of the file). Tensors are returned in data order.
func ReadSafetensors(data []byte) ([]NamedTensor, map[string]string, error) {
	return readSafetensors(data, false)
}

// dtypeSize returns the bytes per element of a supported dtype: F32 always,
// BF16 and F16 (converted to float32) when half is set.
func dtypeSize(dtype string, half bool) int {
	switch {
	case dtype == "F32":
		return 4
	case half && (dtype == "BF16" || dtype == "F16"):
		return 2
	}
	return 0
}

// readSafetensors is ReadSafetensors; with half it also accepts BF16 and F16
// tensors (as Hugging Face checkpoints store them) and widens them to float32.
func readSafetensors(data []byte, half bool) ([]NamedTensor, map[string]string, error) {
	if len(data) < 8 {
		return nil, nil, fmt.Errorf("native: safetensors: file is %d bytes, shorter than the 8-byte header length", len(data))
	}
	hlen := binary.LittleEndian.Uint64(data[:8])
	if hlen > maxHeaderBytes || hlen > uint64(len(data)-8) {
		return nil, nil, fmt.Errorf("native: safetensors: header length %d exceeds the file (%d bytes) or the %d-byte limit (truncated or corrupt file)",
			hlen, len(data), maxHeaderBytes)
	}
	hdr := data[8 : 8+hlen]
	body := data[8+hlen:]

	dec := json.NewDecoder(bytes.NewReader(hdr))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, errors.New("native: safetensors: header is not a JSON object")
	}
	type entry struct {
		name string
		stEntry
	}
	var entries []entry
	var meta map[string]string
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("native: safetensors: corrupt header: %w", err)
		}
		name, _ := tok.(string)
		if seen[name] {
			return nil, nil, fmt.Errorf("native: safetensors: duplicate key %q in header", name)
		}
		seen[name] = true
		if name == "__metadata__" {
			if err := dec.Decode(&meta); err != nil {
				return nil, nil, fmt.Errorf("native: safetensors: corrupt __metadata__: %w", err)
			}
			continue
		}
		var e stEntry
		if err := dec.Decode(&e); err != nil {
			return nil, nil, fmt.Errorf("native: safetensors: corrupt header entry %q: %w", name, err)
		}
		if name == "" {
			return nil, nil, errors.New("native: safetensors: empty tensor name")
		}
		size := dtypeSize(e.Dtype, half)
		if size == 0 {
			want := "F32"
			if half {
				want = "F32, BF16 or F16"
			}
			return nil, nil, fmt.Errorf("native: safetensors: tensor %q has dtype %q, want %s", name, e.Dtype, want)
		}
		n, err := numel(e.Shape)
		if err != nil {
			return nil, nil, fmt.Errorf("native: safetensors: tensor %q: %w", name, err)
		}
		if b, en := e.DataOffsets[0], e.DataOffsets[1]; b < 0 || en < b || en-b != int64(size)*int64(n) {
			return nil, nil, fmt.Errorf("native: safetensors: tensor %q: shape %v needs %d bytes but offsets [%d, %d) give %d",
				name, e.Shape, size*n, b, en, en-b)
		}
		entries = append(entries, entry{name, e})
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("native: safetensors: corrupt header: %w", err)
	}
	// Sort by (begin, end) so empty tensors sharing a start offset with the
	// next tensor come first.
	sort.Slice(entries, func(i, j int) bool {
		a, b := entries[i].DataOffsets, entries[j].DataOffsets
		return a[0] < b[0] || a[0] == b[0] && a[1] < b[1]
	})
	var pos int64
	out := make([]NamedTensor, len(entries))
	for i, e := range entries {
		if e.DataOffsets[0] != pos {
			return nil, nil, fmt.Errorf("native: safetensors: tensor %q starts at byte %d, want %d (offsets must be contiguous)", e.name, e.DataOffsets[0], pos)
		}
		if e.DataOffsets[1] > int64(len(body)) {
			return nil, nil, fmt.Errorf("native: safetensors: tensor %q ends at byte %d past the data section (%d bytes; truncated file?)",
				e.name, e.DataOffsets[1], len(body))
		}
		raw := body[e.DataOffsets[0]:e.DataOffsets[1]]
		var vals []float32
		switch e.Dtype {
		case "F32":
			vals = make([]float32, len(raw)/4)
			for k := range vals {
				vals[k] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*k:]))
			}
		case "BF16":
			vals = make([]float32, len(raw)/2)
			for k := range vals {
				vals[k] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(raw[2*k:])) << 16)
			}
		case "F16":
			vals = make([]float32, len(raw)/2)
			for k := range vals {
				vals[k] = halfToFloat(binary.LittleEndian.Uint16(raw[2*k:]))
			}
		}
		out[i] = NamedTensor{Name: e.name, Shape: e.Shape, Data: vals}
		pos = e.DataOffsets[1]
	}
	if pos != int64(len(body)) {
		return nil, nil, fmt.Errorf("native: safetensors: data section has %d bytes but tensors cover %d", len(body), pos)
	}
	return out, meta, nil
}

// halfToFloat converts an IEEE 754 binary16 value to float32.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
	case frac == 0: // ±0
		return math.Float32frombits(sign)
	}
	// Subnormal: frac·2^-24.
	f := float32(frac) * (1.0 / (1 << 24))
	if sign != 0 {
		f = -f
	}
	return f
}
