package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/server/openaiapi"
	"github.com/agentrl/agentrl/text/tokenizer"
	"github.com/agentrl/agentrl/train"
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
	srv := openaiapi.New(p, openaiapi.Options{})
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	code, remote, errOut := runCLI(t, "", "eval", "-config", cfg, "-vllm", ts.URL, "-episodes", "6")
	if code != 0 {
		t.Fatalf("eval -vllm: exit %d: %s", code, errOut)
	}
	// The collapse metrics too: scored in process, and on the server
	// through prompt_logprobs.
	if lines := strings.SplitAfter(local1, "\n"); len(lines) < 2 || !strings.HasPrefix(lines[1], "collapse") || remote != lines[0]+lines[1] {
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

// standInModelServer serves a tiny random model of context maxSeq over
// the vLLM API, as a stand-in for a served LLM.
func standInModelServer(t *testing.T, name string, maxSeq int) *httptest.Server {
	t.Helper()
	tok := tokenizer.New()
	m, err := native.New(native.Config{Vocab: tok.VocabSize(), DModel: 16, Layers: 1, Heads: 2, DFF: 32, MaxSeq: maxSeq, TieEmbeddings: true}, 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := local.New(name, m, tok)
	if err != nil {
		t.Fatal(err)
	}
	srv := openaiapi.New(p, openaiapi.Options{})
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { ts.Close(); srv.Close() })
	return ts
}

// TestServedModelConfigsEvaluate: every configs/*-vllm.yaml plays its
// episodes to the end against a model behind `serve`, token-level through
// the vLLM client, with the config's whole-conversation prompts fitting the
// served context (a long-context stand-in for the LLM they are meant for).
func TestServedModelConfigsEvaluate(t *testing.T) {
	files, err := filepath.Glob("../configs/*-vllm.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no served-model configs: %v", err)
	}
	ts := standInModelServer(t, "long-context-stand-in", 16384)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			dir := t.TempDir()
			code, out, errOut := runCLI(t, "", "eval", "-config", file, "-vllm", ts.URL, "-episodes", "2", "-set", "rollout.sampling.max_tokens=8", "-out", dir)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			m := evalLine.FindStringSubmatch(out)
			if m == nil || m[1] != "2" || m[7] != "0" {
				t.Fatalf("want 2 episodes, none failed: %q %s", out, errOut)
			}
			cfg, err := train.Load(file, nil)
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(dir, "transcripts.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			// The untrained model never solves a task, so every episode
			// lasts all its turns unless its context runs out.
			for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				var ep struct {
					Messages []struct{ Role string } `json:"messages"`
				}
				if err := json.Unmarshal([]byte(line), &ep); err != nil {
					t.Fatal(err)
				}
				turns := 0
				for _, msg := range ep.Messages {
					if msg.Role == "assistant" {
						turns++
					}
				}
				if turns != cfg.Rollout.MaxTurns {
					t.Errorf("an episode played %d turns, want all %d", turns, cfg.Rollout.MaxTurns)
				}
			}
		})
	}
}
