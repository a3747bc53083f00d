package openaiapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/model/hftest"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/server/openaiapi"
)

// The conformance tests run official OpenAI clients against the server
// over a tiny Hugging Face Qwen2 model with its byte-level BPE tokenizer
// and ChatML template (model/hftest), each call checked for what the
// client's types promise:
//
//   - TestOpenAINodeConformance: the official openai npm package (pinned
//     in testdata/openai-node, installed into its node_modules by `npm ci`
//     there) running testdata/openai-node/calls.mjs. Without node or the
//     package it skips, unless AGENTRL_REQUIRE_NODE=1, when it fails.
//     With AGENTRL_OPENAI_OPENAPI naming a copy of OpenAI's published
//     openapi.json (github.com/openai/openai-openapi; no npm package ships
//     it, so CI has none), the replies are also validated against its
//     schemas, each call's failures reported as "<call>.schema".
//   - TestGoOpenAIConformance (goopenai_conformance_test.go): the same
//     calls with go-openai.

const (
	openaiNodeDir = "testdata/openai-node"
	// conformanceModel is the served name: a Hugging Face style name with a
	// slash, as vLLM serves "Qwen/Qwen2.5-0.5B-Instruct".
	conformanceModel = "agentrl/qwen2-tiny"
	conformanceKey   = "conformance-key"
	// conformanceAdapter is the name the LoRA calls load the adapter as.
	conformanceAdapter = "qwen2-tiny-lora"
)

// openaiNodeCalls are the names calls.mjs prints, in order.
var openaiNodeCalls = []string{
	"models.list", "models.retrieve",
	"completions.basic", "completions.multi_prompt_n2", "completions.logprobs", "completions.stop",
	"completions.echo", "completions.stream_usage",
	"chat.basic", "chat.multi_turn", "chat.n2_seed", "chat.logprobs", "chat.stop", "chat.stream",
	"chat.stream_usage", "chat.max_tokens_legacy",
	"error.unknown_model", "error.wrong_key", "chat.with_response", "lora.flow",
	"tools.required", "tools.named_stream", "tools.multi_turn", "chat.json_schema", "error.tool_choice",
}

// conformance is a server over the tiny Hugging Face model.
type conformance struct {
	ts    *httptest.Server
	dir   hftest.Dir
	model string
	key   string
	// adapter is the PEFT adapter directory to load at run time, or ""
	// when the server offers no runtime LoRA loading.
	adapter string
}

// startConformance writes the tiny model, loads it and serves it with an
// API key.
func startConformance(t *testing.T) *conformance {
	t.Helper()
	d, err := hftest.Write(filepath.Join(t.TempDir(), "qwen2-tiny"), hftest.Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	p, err := local.LoadHF(d.Path, conformanceModel, 0)
	if err != nil {
		t.Fatal(err)
	}
	opts := openaiapi.Options{APIKey: conformanceKey, Model: conformanceModel}
	root := t.TempDir()
	enableRuntimeAdapters(&opts, p, root)
	ts, _ := start(t, p, opts)
	c := &conformance{ts: ts, dir: d, model: conformanceModel, key: conformanceKey}
	if offersAdapterLoading(t, ts.URL) {
		c.adapter = writeConformanceAdapter(t, d, root)
	} else {
		t.Error("the server does not offer POST /v1/load_lora_adapter")
	}
	return c
}

// enableRuntimeAdapters lets the server load LoRA adapters at run time
// from root (vLLM's --enable-lora with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True),
// as `trainer serve -lora-dir` does.
func enableRuntimeAdapters(opts *openaiapi.Options, p *local.Policy, root string) {
	opts.AdapterDir = root
	opts.LoadAdapter = func(_ context.Context, dir string) (policy.Policy, error) { return p.WithPEFT(dir, "") }
}

// offersAdapterLoading reports whether the server has the runtime LoRA
// endpoint: an empty load request is a 400 (no lora_name) where it does,
// and a 404 or 405 where it does not.
func offersAdapterLoading(t *testing.T, url string) bool {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/v1/load_lora_adapter", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+conformanceKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed
}

// writeConformanceAdapter writes a PEFT LoRA adapter directory for the model of d,
// with random nonzero A and B so that it changes the model's outputs, and
// returns its path, inside root.
func writeConformanceAdapter(t *testing.T, d hftest.Dir, root string) string {
	t.Helper()
	m, _, err := local.ReadHF(d.Path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.EnableLoRA(native.LoRAConfig{Rank: 4, Alpha: 16, Targets: []string{"q_proj", "v_proj", "up_proj", "down_proj"}, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	params := m.LoRA().Params()
	for i := range params {
		params[i] = float32(rng.NormFloat64() * 0.2)
	}
	dir := filepath.Join(root, "qwen2-tiny-lora")
	base, err := filepath.Abs(d.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := native.SavePEFT(dir, m, base); err != nil {
		t.Fatal(err)
	}
	return dir
}

// missingOpenAINode skips the test (or, with AGENTRL_REQUIRE_NODE=1, fails
// it) with the reason.
func missingOpenAINode(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...) + "; install with: (cd server/openaiapi/testdata/openai-node && npm ci --no-audit --no-fund)"
	if os.Getenv("AGENTRL_REQUIRE_NODE") == "1" {
		t.Fatal(msg + " [AGENTRL_REQUIRE_NODE=1]")
	}
	t.Skip(msg)
}

// needOpenAINode returns node, or skips unless node and the openai package
// are installed.
func needOpenAINode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		missingOpenAINode(t, "node not found")
	}
	for _, pkg := range []string{"openai", "ajv"} {
		if _, err := os.Stat(filepath.Join(openaiNodeDir, "node_modules", pkg, "package.json")); err != nil {
			missingOpenAINode(t, "the %s npm package is not installed", pkg)
		}
	}
	return node
}

// nodeCallResult is a line calls.mjs prints. OK is true, false or "skip".
type nodeCallResult struct {
	N     int    `json:"n"`
	Name  string `json:"name"`
	OK    any    `json:"ok"`
	Error string `json:"error"`
	Note  string `json:"note"`
}

// TestOpenAINodeConformance runs calls.mjs, the official openai npm
// client's calls (see the list in calls.mjs), against the server and fails
// naming every call that is not ok. The LoRA call may be skipped only when
// the harness has no adapter to give it.
func TestOpenAINodeConformance(t *testing.T) {
	node := needOpenAINode(t)
	c := startConformance(t)
	args := []string{"calls.mjs", "--base-url", c.ts.URL, "--api-key", c.key, "--model", c.model}
	if c.adapter != "" {
		args = append(args, "--adapter-path", c.adapter, "--adapter-name", conformanceAdapter)
	}
	if doc := os.Getenv("AGENTRL_OPENAI_OPENAPI"); doc != "" {
		abs, err := filepath.Abs(doc)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, "--openapi", abs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = openaiNodeDir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("calls.mjs timed out; stdout:\n%s\nstderr:\n%s", stdout.Bytes(), stderr.Bytes())
	}

	got := map[string]nodeCallResult{}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r nodeCallResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Name == "" {
			t.Errorf("calls.mjs printed a line that is not a result: %q", sc.Text())
			continue
		}
		got[r.Name] = r
	}
	var failed, schema []string
	for _, name := range openaiNodeCalls {
		if r, ok := got[name+".schema"]; ok {
			schema = append(schema, fmt.Sprintf("%s (%v): %s", name+".schema", r.OK, r.Error))
			delete(got, name+".schema")
		}
	}
	for _, name := range openaiNodeCalls {
		r, ok := got[name]
		switch {
		case !ok:
			failed = append(failed, name+": no result (calls.mjs stopped early?)")
		case r.OK == true:
			if r.Note != "" {
				t.Logf("%s: ok (%s)", name, r.Note)
			}
		case r.OK == "skip" && name == "lora.flow" && c.adapter == "":
			t.Logf("%s: skipped: %s", name, r.Error)
		default:
			failed = append(failed, fmt.Sprintf("%s (%v): %s", name, r.OK, r.Error))
		}
		delete(got, name)
	}
	for name := range got {
		failed = append(failed, name+": a call this test does not know (add it to openaiNodeCalls)")
	}
	if len(failed) > 0 {
		t.Errorf("%d of %d openai-node calls failed:\n  %s", len(failed), len(openaiNodeCalls), strings.Join(failed, "\n  "))
	}
	if len(schema) > 0 {
		t.Errorf("%d calls had replies that do not conform to the OpenAPI document:\n  %s", len(schema), strings.Join(schema, "\n  "))
	}
	if runErr != nil && len(failed)+len(schema) == 0 {
		t.Errorf("calls.mjs: %v\nstderr:\n%s", runErr, stderr.Bytes())
	}
	if t.Failed() && stderr.Len() > 0 {
		t.Logf("calls.mjs stderr:\n%s", stderr.Bytes())
	}
}
