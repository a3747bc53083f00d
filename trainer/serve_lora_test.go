package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/policy"
)

// writeTinyAdapter saves a PEFT adapter (nonzero B) for the checkpoint in
// baseDir into dir.
func writeTinyAdapter(t *testing.T, baseDir, dir string, seed uint64) {
	t.Helper()
	p, err := local.LoadCheckpoint(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	m := p.Lock()
	defer p.Unlock()
	if err := m.EnableLoRA(native.LoRAConfig{Rank: 2, Alpha: 4, Targets: native.LoRATargets(), Seed: seed}); err != nil {
		t.Fatal(err)
	}
	for i := range m.LoRA().Params() {
		m.LoRA().Params()[i] += float32((int(seed)+i)%7-3) * 0.1
	}
	if err := native.SavePEFT(dir, m, baseDir); err != nil {
		t.Fatal(err)
	}
}

// TestServeLoRA: -lora loads an adapter at start, -lora-dir enables
// loading more over HTTP, and each samples as its directory loaded as a
// checkpoint does.
func TestServeLoRA(t *testing.T) {
	base := writeTinyCheckpoint(t)
	root := filepath.Join(t.TempDir(), "adapters")
	first := filepath.Join(t.TempDir(), "first") // -lora is the operator's: outside the root is fine
	writeTinyAdapter(t, base, first, 1)
	writeTinyAdapter(t, base, filepath.Join(root, "second"), 2)
	rs := startServe(t, base, "-lora-dir", root, "-lora", "first="+first)

	var models struct {
		Data []struct {
			ID     string  `json:"id"`
			Parent *string `json:"parent"`
		} `json:"data"`
	}
	req, _ := http.NewRequest(http.MethodGet, rs.base+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := json.Unmarshal(raw, &models); err != nil || len(models.Data) != 2 || models.Data[1].ID != "first" ||
		models.Data[1].Parent == nil || *models.Data[1].Parent != "tiny-ckpt" {
		t.Fatalf("/v1/models: %v %s", err, raw)
	}

	req, _ = http.NewRequest(http.MethodPost, rs.base+"/v1/load_lora_adapter", strings.NewReader(`{"lora_name": "second", "lora_path": "second"}`))
	req.Header.Set("Authorization", "Bearer k")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(raw) != "Success: LoRA adapter 'second' added successfully." {
		t.Fatalf("load: %d %s", resp.StatusCode, raw)
	}

	prompt := []int{257, 260, 104, 105, 262, 261}
	for _, tc := range []struct{ model, dir string }{{"first", first}, {"second", filepath.Join(root, "second")}, {"tiny-ckpt", base}} {
		var out struct {
			Model   string `json:"model"`
			Choices []struct {
				TokenIDs []int `json:"token_ids"`
			} `json:"choices"`
		}
		rs.postJSON(t, "/v1/completions", `{"model": "`+tc.model+`", "prompt": [257, 260, 104, 105, 262, 261], "max_tokens": 8, "seed": 3, "stop_token_ids": [], "ignore_eos": true, "return_token_ids": true}`, &out)
		p, err := local.LoadCheckpoint(tc.dir)
		if err != nil {
			t.Fatal(err)
		}
		want, err := p.Sample(context.Background(), []policy.Request{{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: 8, Seed: 3, StopTokens: []int{}}}})
		if err != nil {
			t.Fatal(err)
		}
		if out.Model != tc.model || len(out.Choices) != 1 || !slices.Equal(out.Choices[0].TokenIDs, want[0].Tokens) {
			t.Errorf("%s: %+v, want tokens %v", tc.model, out, want[0].Tokens)
		}
	}
	rs.stop(t)
}

func TestServeLoRAUsageErrors(t *testing.T) {
	t.Setenv("AGENTRL_API_KEY", "")
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-checkpoint", "x", "-lora-dir", dir, "-addr", "0.0.0.0:0"}, "needs an API key"},
		{[]string{"-checkpoint", "x", "-lora-dir", dir, "-addr", ":8000"}, "needs an API key"},
		{[]string{"-checkpoint", "x", "-lora-dir", dir, "-addr", "example.com:8000"}, "needs an API key"},
		{[]string{"-checkpoint", "x", "-lora-dir", filepath.Join(dir, "missing")}, "is not a directory"},
		{[]string{"-checkpoint", "x", "-lora", "noequals"}, "NAME=PATH"},
		{[]string{"-checkpoint", "x", "-lora", "a=x", "-lora", "a=y"}, "given twice"},
	} {
		code, _, errOut := runCLI(t, "", append([]string{"serve"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("serve %q: exit %d, want 2 with %q:\n%s", tc.args, code, tc.want, errOut)
		}
	}

	// An adapter checkpoint cannot be the base of more adapters.
	base := writeTinyCheckpoint(t)
	adapter := filepath.Join(t.TempDir(), "adapter")
	writeTinyAdapter(t, base, adapter, 1)
	code, _, errOut := runCLI(t, "", "serve", "-checkpoint", adapter, "-lora-dir", dir)
	if code != 1 || !strings.Contains(errOut, "is itself a LoRA adapter") {
		t.Errorf("serving an adapter with -lora-dir: exit %d, %s", code, errOut)
	}
	// A -lora adapter that does not load stops the start.
	code, _, errOut = runCLI(t, "", "serve", "-checkpoint", base, "-lora", "bad="+dir)
	if code != 1 || !strings.Contains(errOut, "holds no PEFT adapter") {
		t.Errorf("a bad -lora: exit %d, %s", code, errOut)
	}
}

func TestLoopbackOnly(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8000": true, "[::1]:8000": true, "localhost:0": true, "LOCALHOST:1": true, "127.0.0.2:80": true,
		":8000": false, "0.0.0.0:8000": false, "[::]:8000": false, "10.0.0.5:8000": false, "example.com:80": false, "nonsense": false,
	} {
		if got := loopbackOnly(addr); got != want {
			t.Errorf("loopbackOnly(%q) = %v, want %v", addr, got, want)
		}
	}
}
