package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/policy/local"
	"github.com/agentrl/agentrl/policy/serve"
)

var evalLine = regexp.MustCompile(`episodes (\d+)  success ([\d.]+) \(95% CI ([\d.]+)-([\d.]+)\)  mean return (-?[\d.]+)  format-valid ([\d.]+)  failed (\d+)`)

func TestEvalCheckpointAndServerAgree(t *testing.T) {
	dir := writeTinyCheckpoint(t)
	cfg := writeFile(t, "fl.yaml", "env:\n  name: frozenlake\nrollout:\n  max_turns: 2\n  sampling:\n    max_tokens: 12\n")
	out := filepath.Join(t.TempDir(), "eval")
	code, local1, errOut := runCLI(t, "", "eval", "-config", cfg, "-checkpoint", dir, "-episodes", "6", "-out", out)
	if code != 0 {
		t.Fatalf("eval -checkpoint: exit %d: %s", code, errOut)
	}
	m := evalLine.FindStringSubmatch(local1)
	if m == nil || m[1] != "6" || m[7] != "0" {
		t.Fatalf("unexpected summary %q", local1)
	}
	data, err := os.ReadFile(filepath.Join(out, "transcripts.jsonl"))
	if err != nil || strings.Count(string(data), "\n") != 6 {
		t.Fatalf("transcripts: %v, %d lines", err, strings.Count(string(data), "\n"))
	}
	var summary map[string]float64
	raw, _ := os.ReadFile(filepath.Join(out, "summary.json"))
	if err := json.Unmarshal(raw, &summary); err != nil || summary["eval/success_ci_high"] < summary["eval/success"] {
		t.Fatalf("summary.json: %v %v", err, summary)
	}

	// The same checkpoint behind `serve`, evaluated token-level through the
	// vLLM client: the same episodes, so the same summary.
	p, err := local.LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := serve.New(p, serve.Options{})
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	code, remote, errOut := runCLI(t, "", "eval", "-config", cfg, "-vllm", ts.URL, "-episodes", "6")
	if code != 0 {
		t.Fatalf("eval -vllm: exit %d: %s", code, errOut)
	}
	if remote != strings.Split(local1, "\n")[0]+"\n" {
		t.Errorf("in-process and served evaluations differ:\n%s\n%s", local1, remote)
	}
	// Chat-level evaluation through go-openai runs to the end too.
	code, chat, errOut := runCLI(t, "", "eval", "-config", cfg, "-openai", ts.URL+"/v1", "-model", srv.Model(), "-episodes", "3")
	if code != 0 || evalLine.FindStringSubmatch(chat) == nil {
		t.Fatalf("eval -openai: exit %d: %s %s", code, chat, errOut)
	}
}

func TestEvalUsage(t *testing.T) {
	for _, args := range [][]string{
		{"eval"},
		{"eval", "-checkpoint", "a", "-vllm", "b"},
		{"eval", "-openai", "http://127.0.0.1:1/v1"},
		{"eval", "-checkpoint", "a", "-episodes", "0"},
	} {
		if code, _, _ := runCLI(t, "", args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
