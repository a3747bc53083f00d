package local

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/policy"
)

// TestWithPEFT: a policy with an adapter over a copy of the model samples
// what LoadCheckpoint of the adapter directory does, and leaves the base
// policy as it was.
func TestWithPEFT(t *testing.T) {
	p := tinyPolicy(t)
	baseDir := saveTiny(t, p, nil)
	m := p.Lock().Clone()
	p.Unlock()
	if err := m.EnableLoRA(native.LoRAConfig{Rank: 2, Alpha: 4, Targets: []string{"v_proj", "up_proj"}, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	for i := range m.LoRA().Params() {
		m.LoRA().Params()[i] += float32(i%5) * 0.07
	}
	dir := filepath.Join(t.TempDir(), "step-3")
	if err := native.SavePEFT(dir, m, baseDir); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	prompt, _ := p.RenderChat(ctx, []policy.Message{{Role: "user", Content: "hi"}}, true)
	req := []policy.Request{{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: 16, Seed: 5}}}
	before, err := p.Sample(ctx, req)
	if err != nil {
		t.Fatal(err)
	}

	q, err := p.WithPEFT(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := q.Sample(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Sample(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if q.Info().Name != "step-3" || q.Tokenizer() != p.Tokenizer() || !slices.Equal(got[0].Tokens, want[0].Tokens) || !slices.Equal(got[0].LogProbs, want[0].LogProbs) {
		t.Errorf("WithPEFT %s samples %+v, LoadCheckpoint %+v", q.Info().Name, got[0], want[0])
	}
	if slices.Equal(got[0].LogProbs, before[0].LogProbs) {
		t.Error("the adapter does not change the policy")
	}
	after, _ := p.Sample(ctx, req)
	if p.Lock().LoRA() != nil {
		t.Error("the base model got adapters")
	}
	p.Unlock()
	if !slices.Equal(after[0].LogProbs, before[0].LogProbs) {
		t.Error("the base policy changed")
	}

	if _, err := q.WithPEFT(dir, "again"); err == nil || !strings.Contains(err.Error(), "already has LoRA adapters") {
		t.Errorf("WithPEFT over an adapted model: %v", err)
	}
	if _, err := p.WithPEFT(t.TempDir(), "x"); err == nil || !strings.Contains(err.Error(), "adapter_config.json") {
		t.Errorf("WithPEFT of an empty directory: %v", err)
	}
}

// TestWithPEFTChecksBeforeCopying: an adapter the model cannot take (here
// a rank far above the widths of its projections) is refused before the
// model is copied for it, so that refusing it costs no copy.
func TestWithPEFTChecksBeforeCopying(t *testing.T) {
	p := tinyPolicy(t)
	m := p.Lock().Clone()
	p.Unlock()
	if err := m.EnableLoRA(native.LoRAConfig{Rank: 2, Alpha: 4, Targets: []string{"v_proj"}, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := native.SavePEFT(dir, m, "base"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, native.PEFTConfigFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(raw), `"r": 2`, `"r": 1000`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = p.WithPEFT(dir, "")
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "rank 1000 exceeds") {
		t.Fatalf("WithPEFT of rank 1000: %v", err)
	}
	if copied, model := after.TotalAlloc-before.TotalAlloc, uint64(4*m.NumParams()); copied >= model {
		t.Fatalf("refusing the adapter allocated %d bytes, a model is %d", copied, model)
	}
}
