package tokenizer

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func saved(t *testing.T, tok *Tokenizer) string {
	t.Helper()
	var b bytes.Buffer
	if err := tok.Save(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestSaveLoadRoundTrip(t *testing.T) {
	for _, tok := range []*Tokenizer{New(), trained()} {
		js := saved(t, tok)
		back, err := Load(strings.NewReader(js))
		if err != nil {
			t.Fatalf("Load: %v\n%s", err, js[:min(len(js), 500)])
		}
		if again := saved(t, back); again != js {
			t.Fatal("Save(Load(Save(t))) differs from Save(t)")
		}
		if back.VocabSize() != tok.VocabSize() || back.GridCells() != tok.GridCells() {
			t.Fatalf("loaded vocab %d grid %q, want %d %q", back.VocabSize(), back.GridCells(), tok.VocabSize(), tok.GridCells())
		}
		for _, s := range trainingCorpus(3, 5000) {
			if !slices.Equal(back.Encode(s), tok.Encode(s)) {
				t.Fatalf("loaded tokenizer encodes %q differently", s)
			}
		}
	}
	// Grid splitting off survives a round trip.
	off, err := Train(trainingCorpus(1, 20_000), 300, TrainOptions{NoGridSplit: true})
	if err != nil {
		t.Fatal(err)
	}
	back, err := Load(strings.NewReader(saved(t, off)))
	if err != nil || back.GridCells() != "" {
		t.Fatalf("Load: %v, grid %q", err, back.GridCells())
	}
	// Files.
	path := filepath.Join(t.TempDir(), "tok.json")
	if err := trained().SaveFile(path); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(path); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Fatal("LoadFile of a missing file succeeded")
	}
}

func TestLoadErrors(t *testing.T) {
	tok, err := Train([]string{"aaab aaab aaab"}, FirstMergeID+3, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	good := saved(t, tok)
	if tok.NumMerges() != 3 {
		t.Fatalf("fixture has %d merges:\n%s", tok.NumMerges(), good)
	}
	if _, err := Load(strings.NewReader(good)); err != nil {
		t.Fatalf("fixture does not load: %v", err)
	}
	mergesAt := strings.Index(good, `"merges": [`)
	replace := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("fixture lacks %q:\n%s", old, good)
		}
		return strings.Replace(good, old, new, 1)
	}
	cases := []struct {
		name, in, wantMsg string
	}{
		{"empty", "", "empty input"},
		{"truncated", good[:len(good)/2], "unexpected EOF"},
		{"truncated merges", good[:mergesAt+20], "unexpected EOF"},
		{"not JSON", "tokenizer", "invalid character"},
		{"trailing data", good + "{}", "data after"},
		{"unknown field", replace(`"version"`, `"extra": 1, "version"`), "unknown field"},
		{"wrong format", replace(`"agentrl-bpe"`, `"gpt2"`), "format"},
		{"wrong version", replace(`"version": 1`, `"version": 2`), "version 2"},
		{"missing version", replace(`"version": 1,`, ``), "version 0"},
		{"vocab size", replace(`"vocab_size": 270`, `"vocab_size": 271`), "vocab_size 271"},
		{"rule", replace(`"agentrl-v1"`, `"gpt2"`), "pre-tokenisation rule"},
		{"missing pretokenizer", replace(`"pretokenizer": {"rule": "agentrl-v1", "grid_cells": "#_O√XPSG"},`, ``), "missing pretokenizer"},
		{"bad grid cells", replace(`"grid_cells": "#_O√XPSG"`, `"grid_cells": "#\n"`), "newline"},
		{"duplicate special", replace(`{"id": 257, "content": "<|bos|>"}`, `{"id": 257, "content": "<|pad|>"}`), "duplicate special token"},
		{"duplicate special id", replace(`{"id": 257, "content": "<|bos|>"}`, `{"id": 256, "content": "<|bos|>"}`), "duplicate special id"},
		{"renumbered special", replace(`{"id": 257, "content": "<|bos|>"}`, `{"id": 300, "content": "<|bos|>"}`), "does not match"},
		{"missing special", replace(`{"id": 256, "content": "<|pad|>"},`, ``), "10 special tokens"},
		{"missing merges", replace(`"merges": [`, `"mergez": [`), "unknown field"},
		{"merge to unknown id", replace(`[97, 97]`, `[97, 999]`), "not a byte or an earlier merge"},
		{"merge to itself", replace(`[267, 268]`, `[269, 97]`), "not a byte or an earlier merge"},
		{"negative id", replace(`[97, 97]`, `[-1, 97]`), "not a byte or an earlier merge"},
		{"merge of special", replace(`[97, 97]`, `[263, 97]`), "not a byte or an earlier merge"},
		{"merge arity", replace(`[97, 97]`, `[97, 97, 97]`), "has 3 ids"},
		{"merge not int", replace(`[97, 97]`, `[97.5, 97]`), "cannot unmarshal"},
		{"merge string", replace(`[97, 97]`, `["97", 97]`), "cannot unmarshal"},
		{"duplicate merge", replace(`[267, 268]`, `[97, 97]`), "duplicates merge 0"},
	}
	for _, c := range cases {
		_, err := Load(strings.NewReader(c.in))
		if err == nil {
			t.Errorf("%s: Load succeeded", c.name)
			continue
		}
		if !errors.Is(err, ErrFormat) {
			t.Errorf("%s: error %v does not wrap ErrFormat", c.name, err)
		}
		if !strings.Contains(err.Error(), c.wantMsg) {
			t.Errorf("%s: error %q does not mention %q", c.name, err, c.wantMsg)
		}
	}
}
