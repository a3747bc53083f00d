package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// FormatName and FormatVersion identify saved tokenizer files.
const (
	FormatName    = "agentrl-bpe"
	FormatVersion = 1
)

// ErrFormat is wrapped by every error Load returns for a malformed file.
var ErrFormat = errors.New("tokenizer: invalid tokenizer file")

// fileJSON is the saved form of a tokenizer:
//
//	{
//	  "format": "agentrl-bpe",
//	  "version": 1,
//	  "vocab_size": 512,
//	  "pretokenizer": {"rule": "agentrl-v1", "grid_cells": "#_O√XPSG"},
//	  "specials": [{"id": 256, "content": "<|pad|>"}, ...],
//	  "merges": [[32, 116], ...]
//	}
//
// Merge i creates id FirstMergeID+i from the two ids it lists. An empty
// grid_cells means grid-line splitting is off.
type fileJSON struct {
	Format       string        `json:"format"`
	Version      int           `json:"version"`
	VocabSize    int           `json:"vocab_size"`
	Pretokenizer *pretokenJSON `json:"pretokenizer"`
	Specials     []specialJSON `json:"specials"`
	Merges       [][]int64     `json:"merges"`
}

type pretokenJSON struct {
	Rule      string `json:"rule"`
	GridCells string `json:"grid_cells"`
}

type specialJSON struct {
	ID      int    `json:"id"`
	Content string `json:"content"`
}

// Save writes t as JSON, one merge per line. The output is a function of
// the vocabulary alone, so equal tokenizers save to identical bytes.
func (t *Tokenizer) Save(w io.Writer) error {
	var b bytes.Buffer
	str := func(s string) string {
		var q bytes.Buffer
		enc := json.NewEncoder(&q)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s) // a string always encodes
		return strings.TrimSuffix(q.String(), "\n")
	}
	fmt.Fprintf(&b, "{\n  \"format\": %s,\n  \"version\": %d,\n  \"vocab_size\": %d,\n",
		str(FormatName), FormatVersion, t.VocabSize())
	fmt.Fprintf(&b, "  \"pretokenizer\": {\"rule\": %s, \"grid_cells\": %s},\n",
		str(pretokenRule), str(t.pre.gridCells))
	b.WriteString("  \"specials\": [\n")
	for i, s := range specialTexts {
		sep := ","
		if i == len(specialTexts)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "    {\"id\": %d, \"content\": %s}%s\n", specialLo+i, str(s), sep)
	}
	b.WriteString("  ],\n  \"merges\": [")
	for i, m := range t.merges {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n    [")
		b.WriteString(strconv.Itoa(int(m[0])))
		b.WriteString(", ")
		b.WriteString(strconv.Itoa(int(m[1])))
		b.WriteByte(']')
	}
	if len(t.merges) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("]\n}\n")
	_, err := w.Write(b.Bytes())
	return err
}

// SaveFile writes t to the file path (see Save).
func (t *Tokenizer) SaveFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	if err := t.Save(bw); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// LoadFile reads a tokenizer saved with SaveFile.
func LoadFile(path string) (*Tokenizer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := Load(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Load reads a tokenizer written by Save. It rejects, with an error that
// wraps ErrFormat and names the problem: malformed or truncated JSON,
// unknown fields, trailing data, another format or version, a vocab_size
// that disagrees with the merges, missing, duplicate or renumbered special
// tokens, an unknown pre-tokenisation rule, and merges that are not pairs
// of earlier non-special ids or that repeat an earlier merge.
func Load(r io.Reader) (*Tokenizer, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var f fileJSON
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: empty input", ErrFormat)
		}
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the JSON object", ErrFormat)
	}
	if f.Format != FormatName {
		return nil, fmt.Errorf("%w: format %q, want %q", ErrFormat, f.Format, FormatName)
	}
	if f.Version != FormatVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrFormat, f.Version, FormatVersion)
	}
	if f.Pretokenizer == nil {
		return nil, fmt.Errorf("%w: missing pretokenizer", ErrFormat)
	}
	if f.Pretokenizer.Rule != pretokenRule {
		return nil, fmt.Errorf("%w: pre-tokenisation rule %q, want %q", ErrFormat, f.Pretokenizer.Rule, pretokenRule)
	}
	if err := checkSpecials(f.Specials); err != nil {
		return nil, err
	}
	if f.Merges == nil {
		return nil, fmt.Errorf("%w: missing merges", ErrFormat)
	}
	if n := FirstMergeID + len(f.Merges); f.VocabSize != n || n > MaxVocabSize {
		return nil, fmt.Errorf("%w: vocab_size %d, but %d merges make %d ids (at most %d)",
			ErrFormat, f.VocabSize, len(f.Merges), n, MaxVocabSize)
	}
	merges := make([][2]int32, len(f.Merges))
	for i, m := range f.Merges {
		if len(m) != 2 {
			return nil, fmt.Errorf("%w: merge %d has %d ids, want 2", ErrFormat, i, len(m))
		}
		for j, v := range m {
			if v < 0 || v >= int64(FirstMergeID+i) {
				return nil, fmt.Errorf("%w: merge %d %v: id %d is not a byte or an earlier merge", ErrFormat, i, m, v)
			}
			merges[i][j] = int32(v)
		}
	}
	t, err := build(f.Pretokenizer.GridCells, merges)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return t, nil
}

// checkSpecials verifies that the file lists exactly the fixed specials.
func checkSpecials(specials []specialJSON) error {
	seenID := make(map[int]bool)
	seenText := make(map[string]bool)
	for _, s := range specials {
		if seenText[s.Content] {
			return fmt.Errorf("%w: duplicate special token %q", ErrFormat, s.Content)
		}
		if seenID[s.ID] {
			return fmt.Errorf("%w: duplicate special id %d", ErrFormat, s.ID)
		}
		seenText[s.Content], seenID[s.ID] = true, true
		want, ok := SpecialText(s.ID)
		if !ok || want != s.Content {
			return fmt.Errorf("%w: special token %q with id %d does not match the fixed specials", ErrFormat, s.Content, s.ID)
		}
	}
	if len(specials) != NumSpecials {
		return fmt.Errorf("%w: %d special tokens, want %d", ErrFormat, len(specials), NumSpecials)
	}
	return nil
}
