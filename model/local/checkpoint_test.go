package local

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/policy"
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
	onServer := t.TempDir()
	os.WriteFile(filepath.Join(onServer, TinkerRecordFile), []byte(`{"state_path": "tinker://m/weights/u1"}`), 0o644)
	for dir, want := range map[string]string{
		onServer:                              "Tinker server",
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

// TestLoadAdapterCheckpoint: a PEFT adapter directory, and a checkpoint
// that holds one as adapter/ (the trainer's LoRA checkpoints), load as the
// base model they name with the adapters on.
func TestLoadAdapterCheckpoint(t *testing.T) {
	p := tinyPolicy(t)
	baseDir := saveTiny(t, p, nil)
	m := p.Lock().Clone()
	p.Unlock()
	if err := m.EnableLoRA(native.LoRAConfig{Rank: 2, Alpha: 4, Targets: []string{"q_proj", "down_proj"}, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	for i := range m.LoRA().Params() {
		m.LoRA().Params()[i] += float32(i%7) * 0.05
	}
	adapted, err := New("adapted", m, p.Tokenizer())
	if err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(t.TempDir(), "step-9")
	if err := native.SavePEFT(filepath.Join(ckpt, "adapter"), m, baseDir); err != nil {
		t.Fatal(err)
	}
	// A relative base path counts from the adapter directory when it does
	// not exist from the working directory.
	rel, err := filepath.Rel(t.TempDir(), baseDir)
	if err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(t.TempDir(), "peft")
	if err := native.SavePEFT(plain, m, filepath.Join("..", rel)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(plain, filepath.Join("..", rel))); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	prompt, _ := p.RenderChat(ctx, []policy.Message{{Role: "user", Content: "hi"}}, true)
	req := []policy.Request{{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: 16, Seed: 5}}}
	want, err := adapted.Sample(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	base, err := p.Sample(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(base[0].LogProbs, want[0].LogProbs) {
		t.Fatal("the adapters do not change the policy")
	}
	for _, dir := range []string{ckpt, plain} {
		q, err := LoadCheckpoint(dir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := q.Sample(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if q.Info().Name != filepath.Base(dir) || !slices.Equal(got[0].Tokens, want[0].Tokens) || !slices.Equal(got[0].LogProbs, want[0].LogProbs) {
			t.Errorf("%s: %s samples %+v, want %+v", dir, q.Info().Name, got[0], want[0])
		}
	}
	missing := filepath.Join(t.TempDir(), "orphan")
	if err := native.SavePEFT(missing, m, filepath.Join(t.TempDir(), "gone")); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCheckpoint(missing); err == nil || !strings.Contains(err.Error(), "is not a local directory") {
		t.Errorf("adapter without its base: %v", err)
	}
}
