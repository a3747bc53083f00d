package openaiapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentrl/agentrl/model/hftest"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/server/openaiapi"
	"github.com/agentrl/agentrl/text/tokenizer"
)

// loraBase is a served base model and its checkpoint directory.
type loraBase struct {
	name string
	dir  string
	p    *local.Policy
}

// hfBase writes a tiny Qwen2-shaped Hugging Face directory and loads it.
func hfBase(t *testing.T) loraBase {
	t.Helper()
	d, err := hftest.Write(filepath.Join(t.TempDir(), "qwen2-tiny"), hftest.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	p, err := local.LoadCheckpoint(d.Path)
	if err != nil {
		t.Fatal(err)
	}
	return loraBase{"qwen2-tiny", d.Path, p}
}

// nativeBase saves a tiny native checkpoint with the agentrl tokenizer and
// loads it.
func nativeBase(t *testing.T) loraBase {
	t.Helper()
	tok := tokenizer.New()
	m, err := native.New(native.Config{Vocab: tok.VocabSize(), DModel: 32, Layers: 2, Heads: 2, DFF: 64, MaxSeq: 512, TieEmbeddings: true}, 4)
	if err != nil {
		t.Fatal(err)
	}
	var tb bytes.Buffer
	if err := tok.Save(&tb); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "native-tiny")
	if err := native.SaveCheckpoint(dir, m, nil, map[string][]byte{local.TokenizerFile: tb.Bytes()}); err != nil {
		t.Fatal(err)
	}
	p, err := local.LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	return loraBase{"native-tiny", dir, p}
}

// writeAdapter saves a PEFT adapter for b into dir, with weights drawn from
// seed (B nonzero, so the adapter changes the model).
func writeAdapter(t *testing.T, b loraBase, dir string, seed uint64, cfg native.LoRAConfig) {
	t.Helper()
	m := b.p.Lock().Clone()
	b.p.Unlock()
	writeAdapterFor(t, m, b.dir, dir, seed, cfg)
}

func writeAdapterFor(t *testing.T, m *native.Model, baseDir, dir string, seed uint64, cfg native.LoRAConfig) {
	t.Helper()
	cfg.Seed = seed
	if err := m.EnableLoRA(cfg); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 9))
	for i := range m.LoRA().Params() {
		m.LoRA().Params()[i] += float32(rng.NormFloat64() * 0.5)
	}
	if err := native.SavePEFT(dir, m, baseDir); err != nil {
		t.Fatal(err)
	}
}

var loraCfg = native.LoRAConfig{Rank: 4, Alpha: 8, Targets: native.LoRATargets()}

// postText posts a JSON body and returns the status and the raw reply.
func postText(t *testing.T, url, path, body string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.String()
}

func get(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, req)
}

func loadBody(name, path string, inplace bool) string {
	b, _ := json.Marshal(map[string]any{"lora_name": name, "lora_path": path, "load_inplace": inplace})
	return string(b)
}

// errMessage reads an OpenAI error body, checking its shape.
func errMessage(t *testing.T, status int, body string) string {
	t.Helper()
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    int    `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code != status || e.Error.Type == "" || e.Error.Message == "" {
		t.Fatalf("not an OpenAI error body for status %d: %s", status, body)
	}
	return e.Error.Message
}

// loraServer serves b with adapter loading confined to root.
func loraServer(t *testing.T, b loraBase, root string, opts openaiapi.Options) (string, *openaiapi.Server) {
	t.Helper()
	opts.AdapterDir = root
	if opts.LoadAdapter == nil {
		opts.LoadAdapter = func(_ context.Context, dir string) (policy.Policy, error) { return b.p.WithPEFT(dir, "") }
	}
	ts, s := start(t, b.p, opts)
	return ts.URL, s
}

// TestLoRAAdapters: the load → list → sample → unload cycle, for a Hugging
// Face base and a native one; the adapter samples exactly what loading its
// directory as a checkpoint gives.
func TestLoRAAdapters(t *testing.T) {
	for _, mk := range []func(*testing.T) loraBase{hfBase, nativeBase} {
		b := mk(t)
		t.Run(b.name, func(t *testing.T) { testLoRAAdapters(t, b) })
	}
}

func testLoRAAdapters(t *testing.T, b loraBase) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "adapters")
	writeAdapter(t, b, filepath.Join(root, "step-1"), 1, loraCfg)
	writeAdapter(t, b, filepath.Join(root, "run", "step-2", "adapter"), 2, loraCfg) // a trainer checkpoint's layout
	url, srv := loraServer(t, b, root, openaiapi.Options{})

	// Only the base model at first, as vLLM writes its card.
	code, list := get(t, url+"/v1/models")
	data, _ := list["data"].([]any)
	if code != 200 || len(data) != 1 {
		t.Fatalf("/v1/models: %d %v", code, list)
	}
	card := data[0].(map[string]any)
	if card["id"] != b.name || card["object"] != "model" || card["owned_by"] != "vllm" || card["parent"] != nil ||
		card["max_model_len"] != float64(b.p.Info().MaxContext) || len(card["permission"].([]any)) != 1 {
		t.Errorf("base card %v", card)
	}
	perm := card["permission"].([]any)[0].(map[string]any)
	if !strings.HasPrefix(perm["id"].(string), "modelperm-") || perm["object"] != "model_permission" || perm["allow_sampling"] != true ||
		perm["allow_fine_tuning"] != false || perm["organization"] != "*" || perm["group"] != nil || perm["is_blocking"] != false {
		t.Errorf("permission %v", perm)
	}

	code, body := postText(t, url, "/v1/load_lora_adapter", loadBody("step-1", "step-1", false))
	if code != 200 || body != "Success: LoRA adapter 'step-1' added successfully." {
		t.Fatalf("load: %d %q", code, body)
	}
	code, list = get(t, url+"/v1/models")
	data, _ = list["data"].([]any)
	if code != 200 || len(data) != 2 {
		t.Fatalf("/v1/models after load: %d %v", code, list)
	}
	card = data[1].(map[string]any)
	if card["id"] != "step-1" || card["root"] != "step-1" || card["parent"] != b.name || card["owned_by"] != "vllm" ||
		card["max_model_len"] != nil || len(card["permission"].([]any)) != 1 {
		t.Errorf("adapter card %v", card)
	}
	if code, one := get(t, url+"/v1/models/step-1"); code != 200 || one["id"] != "step-1" || one["parent"] != b.name {
		t.Errorf("/v1/models/step-1: %d %v", code, one)
	}
	if code, one := get(t, url+"/v1/models/"+b.name); code != 200 || one["id"] != b.name || one["parent"] != nil {
		t.Errorf("/v1/models/%s: %d %v", b.name, code, one)
	}
	if code, one := get(t, url+"/v1/models/nope"); code != 404 || one["error"] == nil {
		t.Errorf("/v1/models/nope: %d %v", code, one)
	}

	// Sampling and scoring with model=step-1 are the adapter's; the base
	// name still samples the base.
	want1, err := local.LoadCheckpoint(filepath.Join(root, "step-1"))
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, url, "")
	var reqs []policy.Request
	for i, pr := range prompts(t, b.p, 4) {
		sp := policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: 12, Seed: uint64(40 + i)}
		if i == 3 {
			sp.Temperature = 0
		}
		reqs = append(reqs, policy.Request{Prompt: pr, Sampling: sp})
	}
	same := func(what string, got []policy.Sample, want policy.Policy) []policy.Sample {
		t.Helper()
		w, err := want.Sample(ctx, reqs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range w {
			if got[i].Err != nil || !slices.Equal(got[i].Tokens, w[i].Tokens) || !closeLogProbs(got[i].LogProbs, w[i].LogProbs, 1e-5) {
				t.Errorf("%s: sample %d over HTTP %+v\nin process %+v", what, i, got[i], w[i])
			}
		}
		return w
	}
	c.SetModel("step-1")
	got, err := c.Sample(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	adapted := same("step-1", got, want1)
	c.SetModel("")
	if got, err = c.Sample(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	base := same("base", got, b.p)
	differ := false
	for i := range base {
		differ = differ || !slices.Equal(base[i].LogProbs, adapted[i].LogProbs)
	}
	if !differ {
		t.Fatal("the adapter does not change the samples")
	}
	c.SetModel("step-1")
	sreqs := []policy.ScoreRequest{{Prompt: reqs[0].Prompt, Continuation: adapted[0].Tokens}}
	gs, err := c.Score(ctx, sreqs)
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := want1.Score(ctx, sreqs)
	if !closeLogProbs(gs[0], ws[0], 1e-5) {
		t.Errorf("scores with the adapter %v, in process %v", gs[0], ws[0])
	}

	// Chat names the adapter too, and its reply carries the adapter's name.
	code, chat := post(t, url, "/v1/chat/completions", map[string]any{
		"model": "step-1", "messages": []map[string]string{{"role": "user", "content": "hi"}},
		"max_tokens": 8, "seed": 5, "return_token_ids": true,
	})
	chatPrompt, _ := b.p.RenderChat(ctx, []policy.Message{{Role: policy.RoleUser, Content: "hi"}}, true)
	cw, _ := want1.Sample(ctx, []policy.Request{{Prompt: chatPrompt, Sampling: policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: 8, Seed: 5, StopTokens: b.p.Info().StopTokens}}})
	if code != 200 || chat["model"] != "step-1" || !slices.Equal(ids(chat["choices"].([]any)[0].(map[string]any)["token_ids"]), cw[0].Tokens) {
		t.Errorf("chat with the adapter: %d %v, want tokens %v", code, chat, cw[0].Tokens)
	}
	if code, tok := post(t, url, "/tokenize", map[string]any{"model": "step-1", "prompt": "hi"}); code != 200 {
		t.Errorf("/tokenize with the adapter: %d %v", code, tok)
	}

	// Loading a loaded name is vLLM's 400, unless in place; the base name
	// is taken.
	code, body = postText(t, url, "/v1/load_lora_adapter", loadBody("step-1", "step-1", false))
	if code != 400 || !strings.Contains(errMessage(t, code, body), "The lora adapter 'step-1' has already been loaded. If you want to load the adapter in place, set 'load_inplace' to True.") {
		t.Errorf("duplicate load: %d %s", code, body)
	}
	code, body = postText(t, url, "/v1/load_lora_adapter", loadBody(b.name, "step-1", false))
	if code != 400 || !strings.Contains(errMessage(t, code, body), "base model") {
		t.Errorf("load under the base name: %d %s", code, body)
	}
	// In place: a trainer checkpoint's directory (adapter/ inside), by an
	// absolute path inside the root.
	code, body = postText(t, url, "/v1/load_lora_adapter", loadBody("step-1", filepath.Join(root, "run", "step-2"), true))
	if code != 200 || body != "Success: LoRA adapter 'step-1' added successfully." {
		t.Fatalf("load in place: %d %q", code, body)
	}
	if got := srv.Adapters(); !slices.Equal(got, []string{"step-1"}) {
		t.Errorf("adapters after load in place: %v", got)
	}
	want2, err := local.LoadCheckpoint(filepath.Join(root, "run", "step-2"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err = c.Sample(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	same("step-1 replaced by step-2", got, want2)
	if _, one := get(t, url+"/v1/models/step-1"); one["root"] != filepath.Join(root, "run", "step-2") {
		t.Errorf("card after load in place: %v", one)
	}

	// Unload, then the name is unknown everywhere.
	code, body = postText(t, url, "/v1/unload_lora_adapter", `{"lora_name": "step-1", "lora_int_id": 1}`)
	if code != 200 || body != "Success: LoRA adapter 'step-1' removed successfully." {
		t.Fatalf("unload: %d %q", code, body)
	}
	code, body = postText(t, url, "/v1/unload_lora_adapter", `{"lora_name": "step-1"}`)
	if code != 404 || errMessage(t, code, body) != "The lora adapter 'step-1' cannot be found." {
		t.Errorf("unload twice: %d %s", code, body)
	}
	if code, out := post(t, url, "/v1/completions", map[string]any{"model": "step-1", "prompt": "hi", "max_tokens": 2}); code != 404 ||
		!strings.Contains(out["error"].(map[string]any)["message"].(string), "The model `step-1` does not exist.") {
		t.Errorf("sampling an unloaded adapter: %d %v", code, out)
	}
	if code, out := post(t, url, "/v1/chat/completions", map[string]any{"model": "step-1", "messages": []map[string]string{{"role": "user", "content": "x"}}}); code != 404 {
		t.Errorf("chat with an unloaded adapter: %d %v", code, out)
	}
	if got, err := c.Sample(ctx, reqs[:1]); err != nil || got[0].Err == nil || !strings.Contains(got[0].Err.Error(), "does not exist") {
		t.Errorf("client after unload: %v, %+v", err, got)
	}
	if code, out := get(t, url+"/v1/models"); len(out["data"].([]any)) != 1 {
		t.Errorf("/v1/models after unload: %d %v", code, out)
	}
}

// TestLoRAAdapterErrors: missing fields, invalid adapters and paths that
// leave the adapter directory are 400s.
func TestLoRAAdapterErrors(t *testing.T) {
	b := nativeBase(t)
	top := t.TempDir()
	root := filepath.Join(top, "adapters")
	outside := filepath.Join(top, "outside")
	writeAdapter(t, b, outside, 1, loraCfg)
	writeAdapter(t, b, filepath.Join(root, "ok"), 1, loraCfg)
	if err := os.Symlink(outside, filepath.Join(root, "link-out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "ok"), filepath.Join(root, "link-in")); err != nil {
		t.Fatal(err)
	}
	// A directory inside whose adapter files point outside.
	if err := os.MkdirAll(filepath.Join(root, "files-out"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{native.PEFTConfigFile, native.PEFTWeightsFile} {
		if err := os.Symlink(filepath.Join(outside, f), filepath.Join(root, "files-out", f)); err != nil {
			t.Fatal(err)
		}
	}
	// A trainer checkpoint whose adapter/ points outside, and an adapter
	// file that points at nothing outside: the same reply as the rest.
	for _, d := range []string{"sub-out", "dangling"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "sub-out", "adapter")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(top, "nothing", native.PEFTConfigFile), filepath.Join(root, "dangling", native.PEFTConfigFile)); err != nil {
		t.Fatal(err)
	}
	// Invalid adapters: another base's shapes, a rank that the tensors do
	// not have, an unknown target module.
	other, err := native.New(native.Config{Vocab: b.p.VocabSize(), DModel: 48, Layers: 2, Heads: 2, DFF: 64, MaxSeq: 512, TieEmbeddings: true}, 1)
	if err != nil {
		t.Fatal(err)
	}
	writeAdapterFor(t, other, b.dir, filepath.Join(root, "shapes"), 1, loraCfg)
	edit := func(name string, f func(cfg map[string]any)) {
		dir := filepath.Join(root, name)
		writeAdapter(t, b, dir, 1, loraCfg)
		path := filepath.Join(dir, native.PEFTConfigFile)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var cfg map[string]any
		if err := json.Unmarshal(raw, &cfg); err != nil {
			t.Fatal(err)
		}
		f(cfg)
		if raw, err = json.Marshal(cfg); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("rank", func(cfg map[string]any) { cfg["r"] = 2 })
	edit("targets", func(cfg map[string]any) { cfg["target_modules"] = []string{"q_proj", "foo_proj"} })
	if err := os.MkdirAll(filepath.Join(root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	url, srv := loraServer(t, b, root, openaiapi.Options{})

	for _, tc := range []struct{ body, want string }{
		{`{"lora_path": "ok"}`, "Both 'lora_name' and 'lora_path' must be provided."},
		{`{"lora_name": "a"}`, "Both 'lora_name' and 'lora_path' must be provided."},
		{`{"lora_name": "a", "lora_path": 3}`, "lora_path"},
		{`[1]`, "JSON object"},
		{loadBody("a", "shapes", false), "an adapter for another base model?"},
		{loadBody("a", "rank", false), "rank mismatch"},
		{loadBody("a", "targets", false), "foo_proj"},
		{loadBody("a", "empty", false), "holds no PEFT adapter"},
	} {
		code, body := postText(t, url, "/v1/load_lora_adapter", tc.body)
		if code != 400 || !strings.Contains(errMessage(t, code, body), tc.want) {
			t.Errorf("load %s: %d %s, want 400 with %q", tc.body, code, body, tc.want)
		}
	}
	// Every path that leaves the root, or does not exist, gets the same
	// reply, which does not say whether the outside path exists.
	for _, path := range []string{
		"../outside", outside, "link-out", "files-out", "sub-out", "dangling", "missing", filepath.Join(top, "missing"), "ok/../../outside",
		filepath.Join(root, "ok", native.PEFTConfigFile), // a file, not a directory
	} {
		code, body := postText(t, url, "/v1/load_lora_adapter", loadBody("a", path, false))
		msg := ""
		if code == 400 {
			msg = errMessage(t, code, body)
		}
		if code != 400 || !strings.Contains(msg, "is not a directory inside this server's LoRA adapter directory") || strings.Contains(msg, "no such file") {
			t.Errorf("load %q: %d %s", path, code, body)
		}
	}
	if len(srv.Adapters()) != 0 {
		t.Fatalf("adapters loaded by failed requests: %v", srv.Adapters())
	}
	// A symbolic link that stays inside is fine.
	if code, body := postText(t, url, "/v1/load_lora_adapter", loadBody("in", "link-in", false)); code != 200 {
		t.Errorf("load through a link inside the root: %d %s", code, body)
	}
	for _, body := range []string{`{}`, `{"lora_name": ""}`} {
		if code, reply := postText(t, url, "/v1/unload_lora_adapter", body); code != 400 || !strings.Contains(errMessage(t, code, reply), "'lora_name' needs to be provided") {
			t.Errorf("unload %s: %d %s", body, code, reply)
		}
	}
	if code, reply := postText(t, url, "/v1/unload_lora_adapter", `{"lora_name": "nope"}`); code != 404 || errMessage(t, code, reply) != "The lora adapter 'nope' cannot be found." {
		t.Errorf("unload unknown: %d %s", code, reply)
	}
	if code, reply := postText(t, url, "/v1/unload_lora_adapter", `{"lora_name": "`+b.name+`"}`); code != 404 {
		t.Errorf("unload the base model: %d %s", code, reply)
	}
	// AddAdapter (the operator's -lora) is not confined.
	if err := srv.AddAdapter(context.Background(), "outside", outside, false); err != nil {
		t.Errorf("AddAdapter outside the root: %v", err)
	}
	if err := srv.AddAdapter(context.Background(), "outside", outside, false); err == nil || !strings.Contains(err.Error(), "already been loaded") {
		t.Errorf("AddAdapter twice: %v", err)
	}
}

// TestLoRARoutesOff: without Options.AdapterDir the routes do not exist;
// with an API key they need it.
func TestLoRARoutesOff(t *testing.T) {
	b := nativeBase(t)
	ts, _ := start(t, b.p, openaiapi.Options{})
	for _, path := range []string{"/v1/load_lora_adapter", "/v1/unload_lora_adapter"} {
		if code, body := postText(t, ts.URL, path, loadBody("a", "b", false)); code != 404 {
			t.Errorf("%s without AdapterDir: %d %s", path, code, body)
		}
	}

	root := t.TempDir()
	writeAdapter(t, b, filepath.Join(root, "a"), 1, loraCfg)
	url, _ := loraServer(t, b, root, openaiapi.Options{APIKey: "sekret"})
	for _, path := range []string{"/v1/load_lora_adapter", "/v1/unload_lora_adapter"} {
		if code, body := postText(t, url, path, loadBody("a", "a", false)); code != 401 {
			t.Errorf("%s without the key: %d %s", path, code, body)
		}
	}
	if code, body := postText(t, url, "/v1/load_lora_adapter", loadBody("a", "a", false), "Authorization", "Bearer sekret"); code != 200 {
		t.Errorf("load with the key: %d %s", code, body)
	}
	if code, _ := get(t, url+"/v1/models/a"); code != 401 {
		t.Errorf("/v1/models/a without the key: %d", code)
	}
	if code, body := postText(t, url, "/v1/unload_lora_adapter", `{"lora_name": "a"}`, "Authorization", "Bearer sekret"); code != 200 {
		t.Errorf("unload with the key: %d %s", code, body)
	}
}

// gatedPolicy holds its Sample calls until release is closed, and counts
// the sequences it samples.
type gatedPolicy struct {
	*local.Policy
	entered chan struct{}
	release chan struct{}
	seqs    atomic.Int64
}

func (g *gatedPolicy) Sample(ctx context.Context, reqs []policy.Request) ([]policy.Sample, error) {
	g.seqs.Add(int64(len(reqs)))
	select {
	case g.entered <- struct{}{}:
	default:
	}
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Policy.Sample(ctx, reqs)
}

// TestLoRAUnloadInFlight: requests for an adapter that is unloaded while
// they sample finish with it; requests for different models never share a
// Sample call.
func TestLoRAUnloadInFlight(t *testing.T) {
	b := nativeBase(t)
	root := t.TempDir()
	writeAdapter(t, b, filepath.Join(root, "a"), 1, loraCfg)
	var gated *gatedPolicy
	base := &counting{Policy: b.p}
	opts := openaiapi.Options{
		AdapterDir: root, MaxConcurrentBatches: 2, Logger: quietLogger(),
		LoadAdapter: func(_ context.Context, dir string) (policy.Policy, error) {
			p, err := b.p.WithPEFT(dir, "")
			if err != nil {
				return nil, err
			}
			gated = &gatedPolicy{Policy: p, entered: make(chan struct{}, 1), release: make(chan struct{})}
			return gated, nil
		},
	}
	ts, _ := start(t, base, opts)
	url := ts.URL
	if code, body := postText(t, url, "/v1/load_lora_adapter", loadBody("a", "a", false)); code != 200 {
		t.Fatalf("load: %d %s", code, body)
	}
	want, err := local.LoadCheckpoint(filepath.Join(root, "a"))
	if err != nil {
		t.Fatal(err)
	}
	prompt := prompts(t, b.p, 1)[0]
	ws, _ := want.Sample(context.Background(), []policy.Request{{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: 6, Seed: 9, StopTokens: []int{}}}})

	var wg sync.WaitGroup
	var adapterCode int
	var adapterOut map[string]any
	wg.Go(func() {
		adapterCode, adapterOut = post(t, url, "/v1/completions", map[string]any{
			"model": "a", "prompt": prompt, "max_tokens": 6, "seed": 9, "stop_token_ids": []int{}, "ignore_eos": true, "return_token_ids": true,
		})
	})
	<-gated.entered
	// The base model samples meanwhile, in its own call.
	for range 3 {
		if code, out := post(t, url, "/v1/completions", map[string]any{"model": b.name, "prompt": prompt, "max_tokens": 3, "n": 2}); code != 200 {
			t.Fatalf("base request: %d %v", code, out)
		}
	}
	if code, body := postText(t, url, "/v1/unload_lora_adapter", `{"lora_name": "a"}`); code != 200 {
		t.Fatalf("unload in flight: %d %s", code, body)
	}
	if code, out := post(t, url, "/v1/completions", map[string]any{"model": "a", "prompt": prompt, "max_tokens": 2}); code != 404 {
		t.Errorf("new request after unload: %d %v", code, out)
	}
	close(gated.release)
	wg.Wait()
	if adapterCode != 200 || adapterOut["model"] != "a" ||
		!slices.Equal(ids(adapterOut["choices"].([]any)[0].(map[string]any)["token_ids"]), ws[0].Tokens) {
		t.Errorf("the request in flight: %d %v, want tokens %v", adapterCode, adapterOut, ws[0].Tokens)
	}
	if got := gated.seqs.Load(); got != 1 {
		t.Errorf("the adapter sampled %d sequences, want 1", got)
	}
	if got := base.seqs.Load(); got != 6 {
		t.Errorf("the base sampled %d sequences, want 6", got)
	}
}

// TestLoRAServerClosed: loading after Close fails.
func TestLoRAServerClosed(t *testing.T) {
	b := nativeBase(t)
	root := t.TempDir()
	writeAdapter(t, b, filepath.Join(root, "a"), 1, loraCfg)
	s := openaiapi.New(b.p, openaiapi.Options{AdapterDir: root, Logger: quietLogger(),
		LoadAdapter: func(_ context.Context, dir string) (policy.Policy, error) { return b.p.WithPEFT(dir, "") }})
	if err := s.AddAdapter(context.Background(), "a", filepath.Join(root, "a"), false); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := s.AddAdapter(context.Background(), "b", filepath.Join(root, "a"), false); err == nil {
		t.Error("AddAdapter after Close succeeded")
	}
	if len(s.Adapters()) != 0 {
		t.Errorf("adapters after Close: %v", s.Adapters())
	}
}
