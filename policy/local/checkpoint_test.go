package local

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/policy/native"
)

// saveTiny writes p's model and tokenizer as a checkpoint in a fresh dir.
func saveTiny(t *testing.T, p *Policy, extra map[string][]byte) string {
	t.Helper()
	var tb bytes.Buffer
	if err := p.Tokenizer().Save(&tb); err != nil {
		t.Fatal(err)
	}
	if extra == nil {
		extra = map[string][]byte{TokenizerFile: tb.Bytes()}
	}
	dir := filepath.Join(t.TempDir(), "step-7")
	m := p.Lock()
	err := native.SaveCheckpoint(dir, m, nil, extra)
	p.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLoadCheckpointRoundTrip(t *testing.T) {
	p := tinyPolicy(t)
	dir := saveTiny(t, p, nil)
	q, err := LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	if q.Info().Name != "step-7" || q.Info().MaxContext != p.Info().MaxContext {
		t.Errorf("Info %+v", q.Info())
	}
	named, err := LoadCheckpointNamed(dir, "policy-v3")
	if err != nil || named.Info().Name != "policy-v3" {
		t.Fatalf("LoadCheckpointNamed: %v, %+v", err, named)
	}
	ctx := context.Background()
	prompt, _ := p.RenderChat(ctx, []policy.Message{{Role: "user", Content: "hi"}}, true)
	req := []policy.Request{{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: 16, Seed: 5}}}
	a, err := p.Sample(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := q.Sample(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a[0].Tokens, b[0].Tokens) || !slices.Equal(a[0].LogProbs, b[0].LogProbs) {
		t.Errorf("loaded policy samples %+v, saved one %+v", b[0], a[0])
	}
}

func TestLoadCheckpointErrors(t *testing.T) {
	p := tinyPolicy(t)
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, []byte("x"), 0o644)
	noTok := saveTiny(t, p, map[string][]byte{"notes.txt": []byte("hi")})
	badTok := saveTiny(t, p, map[string][]byte{TokenizerFile: []byte(`{"format": "nope"}`)})
	badCfg := saveTiny(t, p, nil)
	os.WriteFile(filepath.Join(badCfg, native.ConfigFile), []byte("{"), 0o644)
	for dir, want := range map[string]string{
		filepath.Join(t.TempDir(), "missing"): "does not exist",
		file:                                  "not a directory",
		noTok:                                 "has no tokenizer.json",
		badTok:                                "tokenizer.json",
		badCfg:                                "config.json",
	} {
		_, err := LoadCheckpoint(dir)
		t.Logf("%s: %v", filepath.Base(dir), err)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadCheckpoint(%s) = %v, want an error about %q", filepath.Base(dir), err, want)
		}
	}
}
