// Package served is the sampler that plays a run's rollouts on a served
// copy of the model (server.url): a vLLM server, `trainer serve`, or any
// server of the same OpenAI-compatible API with runtime LoRA loading,
// serving the Hugging Face model of model.init, while the learner
// (train/inprocess) trains LoRA adapters on that model. It registers as
// train's "served" sampler:
//
//	import _ "github.com/agentrl/agentrl/train/served"
package served

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentrl/agentrl/client/vllm"
	"github.com/agentrl/agentrl/internal/atomicdir"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/train"
)

func init() {
	train.RegisterSampler(train.SamplerServed, train.SamplerRegistration{
		Description: "samples on a vLLM-compatible server (server.url) that loads the learner's LoRA adapters after every step",
		Check:       check,
		New:         New,
	})
}

// check requires model.init to be a Hugging Face model directory: the
// server serves it, and the learner trains the same model.
func check(cfg train.Config) error {
	if !local.IsHFDir(cfg.Model.Init) {
		return fmt.Errorf("server.url: model.init %s is not a Hugging Face model directory: the server serves a Hugging Face model and the learner trains the same one", cfg.Model.Init)
	}
	return nil
}

// adaptersDir is the default server.adapter_dir inside the run directory.
const adaptersDir = "adapters"

// sampler samples a run's rollouts on a server (server.url) that serves
// model.init and loads the learner's LoRA adapters at run time.
// Weight sync is explicit and versioned: version v of the weights (the
// learner after v completed steps) is written as a PEFT adapter directory
// <adapter_dir>/<prefix>-v<v>, loaded under that name (POST
// /v1/load_lora_adapter), and sampled by naming it as the model; the
// previous version is then unloaded and its directory removed. prefix is
// the run directory's name and a random session id, so that two runs, or
// two sessions of one run (a resume after a crash that left an adapter
// loaded), never reuse a name on one server. Rollouts are synchronous per
// step, so no request uses the previous version once the next is loaded.
type sampler struct {
	client *vllm.Client
	saver  train.AdapterSaver
	log    *slog.Logger
	// dir is the local adapter directory (absolute); remote joins a
	// version's name to the directory as the server sees it.
	dir    string
	remote func(name string) string
	keep   bool
	prefix string
	// versioned keeps earlier versions loaded until retired (the run
	// samples ahead: rollout.staleness ≥ 1); otherwise publishing a
	// version unloads the one before.
	versioned bool

	// mu guards held, the adapters loaded by version, and current, the
	// newest.
	mu      sync.Mutex
	held    map[int]adapter
	current int
	// where is the server's URL as configured.
	where string
}

// adapter is a version of the weights as the server holds it.
type adapter struct{ name, dir string }

// New is the served sampler's factory (a train.SamplerFactory). It
// connects to the server, checks that it serves the model the learner
// trains (the tokenizer and chat template through /tokenize, the context
// length), loads the learner's current adapters as the given version, and
// checks the served policy's scores of a probe against the learner's
// (server.probe_tolerance).
func New(ctx context.Context, start *train.Start, l train.Learner, version int) (_ train.Sampler, err error) {
	cfg, log := start.Config, start.Log
	sc := cfg.Server
	saver, ok := l.(train.AdapterSaver)
	if !ok {
		return nil, errors.New("server.url: this learner cannot export LoRA adapters for a server")
	}
	learnerPolicy := l.Policy()
	li := learnerPolicy.Info()
	key := sc.APIKey
	if key == "" {
		key = os.Getenv("AGENTRL_API_KEY")
	}
	// The learner's stop tokens, so that the served policy ends replies
	// exactly where the learner's would.
	opts := vllm.Options{BaseURLs: sc.URLs(), APIKey: key, Model: sc.Model, StopTokens: slices.Clone(li.StopTokens), Logger: log,
		Retry: vllm.Retry{Outage: sc.Outage}}
	if tr, ok := learnerPolicy.(policy.ToolRenderer); ok {
		// The learner's template is the server's (checked below).
		opts.ToolCallFormat = tr.ToolCallFormat()
	}
	if opts.StopTokens == nil {
		opts.StopTokens = []int{}
	}
	where := sc.URL
	probe, err := vllm.New(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("server %s: %w", where, err)
	}
	served := probe.Info().MaxContext
	probe.Close()
	if served < li.MaxContext {
		return nil, fmt.Errorf("server %s: model %q has a context of %d tokens (max_model_len), shorter than the learner's %d (model.max_seq, or model.init's max_position_embeddings): "+
			"start the server with --max-model-len %d or more, or set model.max_seq to %d", where, probe.BaseModel(), served, li.MaxContext, li.MaxContext, served)
	}
	// The learner trains on at most its own context: the client lowers
	// every request to it.
	opts.MaxContext = li.MaxContext
	client, err := vllm.New(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("server %s: %w", where, err)
	}
	defer func() {
		if err != nil {
			client.Close()
		}
	}()
	if err := checkServedText(ctx, client, learnerPolicy); err != nil {
		return nil, fmt.Errorf("server %s: model %q is not model.init (%s): %w", where, client.BaseModel(), cfg.Model.Init, err)
	}

	dir := sc.AdapterDir
	if dir == "" {
		dir = filepath.Join(cfg.Run.Out, adaptersDir)
		if !sc.KeepAdapters {
			// The run's own directory: what earlier sessions left there
			// (a crash leaves its last adapter) is of no further use.
			if err := os.RemoveAll(dir); err != nil {
				return nil, err
			}
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("server.adapter_dir: %w", err)
	}
	remote := func(name string) string { return filepath.Join(dir, name) }
	if on := sc.AdapterDirOnServer; on != "" {
		// The server's path, written with slashes whatever this machine
		// uses.
		remote = func(name string) string { return path.Join(on, name) }
	}
	var id [3]byte
	rand.Read(id[:])
	sp := &sampler{client: client, saver: saver, log: log, dir: dir, remote: remote, keep: sc.KeepAdapters, where: where,
		versioned: cfg.Rollout.Staleness > 0, held: map[int]adapter{}, current: -1,
		prefix: adapterName(filepath.Base(filepath.Clean(cfg.Run.Out))) + "-" + hex.EncodeToString(id[:])}
	if err := sp.Publish(ctx, version); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			sp.Close()
		}
	}()
	diff, n := math.NaN(), 0
	if sc.ProbeTolerance >= 0 {
		if diff, n, err = probeScores(ctx, client, learnerPolicy); err != nil {
			return nil, fmt.Errorf("server %s: scoring the probe (set server.probe_tolerance negative to skip this check): %w", where, err)
		}
	}
	if sc.ProbeTolerance >= 0 && !(diff <= sc.ProbeTolerance) {
		return nil, fmt.Errorf("server %s: model %q with adapter %s scores a probe %.3g nats per token away from the learner's model.init (%s) on average (%d tokens; server.probe_tolerance is %g): it serves another model with the same tokenizer "+
			"(or computes far less precisely than expected: then raise server.probe_tolerance, or set it negative to skip the check)",
			where, client.BaseModel(), client.Model(), diff, cfg.Model.Init, n, sc.ProbeTolerance)
	}
	log.Info("sampling on a server", "url", where, "model", client.BaseModel(), "adapter", client.Model(),
		"max_model_len", served, "max_context", li.MaxContext, "probe_mean_abs_logprob_diff", diff, "adapter_dir", dir)
	return sp, nil
}

// adapterName keeps the characters of s that are safe in a model name and
// a directory name, replacing the others with '-'.
func adapterName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			return r
		}
		return '-'
	}, s)
	if s = strings.Trim(s, "-."); s == "" {
		s = "run"
	}
	return s
}

// checkServedText compares the server's tokenizer and chat template with
// the learner's: a probe text, and a probe conversation rendered with the
// generation prompt.
func checkServedText(ctx context.Context, served, mine policy.Policy) error {
	want, err := mine.Encode(ctx, train.ProbeText)
	if err != nil {
		return err
	}
	got, err := served.Encode(ctx, train.ProbeText)
	if err != nil {
		return fmt.Errorf("/tokenize: %w", err)
	}
	if err := sameTokens("its tokenizer", got, want); err != nil {
		return err
	}
	msgs := []policy.Message{{Role: policy.RoleSystem, Content: "You are a probe."}, {Role: policy.RoleUser, Content: train.ProbeText}}
	if want, err = mine.RenderChat(ctx, msgs, true); err != nil {
		return err
	}
	if got, err = served.RenderChat(ctx, msgs, true); err != nil {
		return fmt.Errorf("/tokenize (chat): %w", err)
	}
	return sameTokens("its chat template", got, want)
}

// sameTokens explains where two token sequences part.
func sameTokens(what string, got, want []int) error {
	if slices.Equal(got, want) {
		return nil
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	show := func(ids []int) string {
		end := min(len(ids), i+8)
		s := fmt.Sprint(ids[i:end])
		if end < len(ids) {
			s = strings.TrimSuffix(s, "]") + " …]"
		}
		return s
	}
	return fmt.Errorf("%s differs from the learner's: a probe gives %d tokens there, %d here, first differing at token %d (%s there, %s here)",
		what, len(got), len(want), i, show(got), show(want))
}

// probeScores returns the mean |Δ log-prob| between the served policy and
// the learner's on a probe reply, and the number of tokens compared.
func probeScores(ctx context.Context, served, mine policy.Policy) (float64, int, error) {
	prompt, err := mine.RenderChat(ctx, []policy.Message{{Role: policy.RoleUser, Content: train.ProbeText}}, true)
	if err != nil {
		return 0, 0, err
	}
	reply, err := mine.Encode(ctx, "The box is right of the player, so I push right: Right.")
	if err != nil {
		return 0, 0, err
	}
	if stop := mine.Info().StopTokens; len(stop) > 0 {
		reply = append(reply, stop[0])
	}
	req := []policy.ScoreRequest{{Prompt: prompt, Continuation: reply}}
	want, err := mine.Score(ctx, req)
	if err != nil {
		return 0, 0, err
	}
	got, err := served.Score(ctx, req)
	if err != nil {
		return 0, 0, err
	}
	if len(got) != 1 || len(got[0]) != len(reply) {
		return 0, 0, fmt.Errorf("%d log-prob rows for one request", len(got))
	}
	sum := 0.0
	for i := range reply {
		sum += math.Abs(got[0][i] - want[0][i])
	}
	return sum / float64(len(reply)), len(reply), nil
}

// Policy implements train.Sampler: the served policy, sampling with the
// newest adapter.
func (sp *sampler) Policy() policy.Policy {
	return restoring{sp.client, sp, func() (adapter, bool) {
		sp.mu.Lock()
		defer sp.mu.Unlock()
		a, ok := sp.held[sp.current]
		return a, ok
	}}
}

// PolicyAt implements train.VersionedSampler: the served policy pinned to
// version v's adapter.
func (sp *sampler) PolicyAt(v int) (policy.Policy, error) {
	sp.mu.Lock()
	a, ok := sp.held[v]
	sp.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("server %s: version %d of the weights is not loaded", sp.where, v)
	}
	return restoring{sp.client.Pin(a.name), sp, func() (adapter, bool) { return a, true }}, nil
}

// Retire implements train.VersionedSampler: version v is unloaded and its
// directory removed (unless server.keep_adapters), unless it is the
// newest.
func (sp *sampler) Retire(v int) {
	sp.mu.Lock()
	a, ok := sp.held[v]
	ok = ok && v != sp.current
	if ok {
		delete(sp.held, v)
	}
	sp.mu.Unlock()
	if ok {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		sp.retire(ctx, a.name, a.dir)
		cancel()
	}
}

// restoring is the served policy as rollouts use it. The client waits out
// a server's outage (server.outage); a server that comes back has lost its
// adapters, and a call that names one gets "does not exist": restoring
// loads the adapter again and redoes the call (in Sample, only the
// requests that failed so), with the same seeds, so the step samples what
// it would have sampled without the outage.
type restoring struct {
	policy.Policy
	sp *sampler
	// adapter is the adapter the calls name.
	adapter func() (adapter, bool)
}

// maxRestores bounds the reloads of one call.
const maxRestores = 3

// restore loads the adapter again on every server that lost it.
func (p restoring) restore(ctx context.Context, what string) error {
	a, ok := p.adapter()
	if !ok {
		return errors.New("no adapter is loaded")
	}
	p.sp.log.Warn("the server lost the adapter (restarted?): loading it again and redoing the call", "adapter", a.name, "call", what)
	if err := p.sp.client.EnsureLoRA(ctx, a.name, p.sp.remote(a.name)); err != nil {
		return fmt.Errorf("reloading adapter %s: %w", a.name, err)
	}
	return nil
}

// retry runs call until it stops failing for a missing adapter.
func retry[T any](ctx context.Context, p restoring, what string, call func() (T, error)) (T, error) {
	v, err := call()
	for try := 0; try < maxRestores && vllm.IsModelMissing(err); try++ {
		if rerr := p.restore(ctx, what); rerr != nil {
			return v, errors.Join(err, rerr)
		}
		v, err = call()
	}
	return v, err
}

// RenderChat implements policy.Policy.
func (p restoring) RenderChat(ctx context.Context, msgs []policy.Message, gen bool) ([]int, error) {
	return retry(ctx, p, "render", func() ([]int, error) { return p.Policy.RenderChat(ctx, msgs, gen) })
}

// RenderChatTools implements policy.ToolRenderer.
func (p restoring) RenderChatTools(ctx context.Context, msgs []policy.Message, tools []policy.Tool, gen bool) ([]int, error) {
	tr, ok := p.Policy.(policy.ToolRenderer)
	if !ok {
		return nil, errors.New("the served policy renders no tools")
	}
	return retry(ctx, p, "render", func() ([]int, error) { return tr.RenderChatTools(ctx, msgs, tools, gen) })
}

// ToolCallFormat implements policy.ToolRenderer.
func (p restoring) ToolCallFormat() string {
	if tr, ok := p.Policy.(policy.ToolRenderer); ok {
		return tr.ToolCallFormat()
	}
	return ""
}

// Encode implements policy.Policy.
func (p restoring) Encode(ctx context.Context, text string) ([]int, error) {
	return retry(ctx, p, "encode", func() ([]int, error) { return p.Policy.Encode(ctx, text) })
}

// Decode implements policy.Policy.
func (p restoring) Decode(ctx context.Context, ids []int) (string, error) {
	return retry(ctx, p, "decode", func() (string, error) { return p.Policy.Decode(ctx, ids) })
}

// Score implements policy.Policy.
func (p restoring) Score(ctx context.Context, reqs []policy.ScoreRequest) ([][]float64, error) {
	return retry(ctx, p, "score", func() ([][]float64, error) { return p.Policy.Score(ctx, reqs) })
}

// Sample implements policy.Policy: a request that failed for the missing
// adapter is redone alone, the others keep their samples.
func (p restoring) Sample(ctx context.Context, reqs []policy.Request) ([]policy.Sample, error) {
	out, err := p.Policy.Sample(ctx, reqs)
	for try := 0; err == nil && try < maxRestores; try++ {
		var missing []int
		for i, s := range out {
			if vllm.IsModelMissing(s.Err) {
				missing = append(missing, i)
			}
		}
		if len(missing) == 0 {
			break
		}
		if rerr := p.restore(ctx, "sample"); rerr != nil {
			p.sp.log.Warn("restoring the adapter", "err", rerr)
			break
		}
		redo := make([]policy.Request, len(missing))
		for j, i := range missing {
			redo[j] = reqs[i]
		}
		again, rerr := p.Policy.Sample(ctx, redo)
		if rerr != nil {
			return nil, rerr
		}
		for j, i := range missing {
			out[i] = again[j]
		}
	}
	return out, err
}

// Describe implements train.Sampler.
func (sp *sampler) Describe() string { return "server " + sp.where }

// Publish implements train.Sampler: it writes the learner's adapters as
// the given version, loads them on the server under a new name, switches
// sampling to it and unloads the previous version. The directory is
// written whole before the server is told of it (a temporary directory
// renamed into place). On failure the previous version stays served.
func (sp *sampler) Publish(ctx context.Context, version int) error {
	name := fmt.Sprintf("%s-v%d", sp.prefix, version)
	dir := filepath.Join(sp.dir, name)
	if err := atomicdir.Write(dir, func(tmp string) error { return sp.saver.SaveAdapter(ctx, tmp) }); err != nil {
		return fmt.Errorf("writing the adapter of version %d: %w", version, err)
	}
	remote := sp.remote(name)
	if err := sp.client.LoadLoRA(ctx, name, remote); err != nil {
		if !sp.keep {
			os.RemoveAll(dir)
		}
		return fmt.Errorf("the server did not load adapter %s (lora_path %s): %w", name, remote, err)
	}
	sp.client.SetModel(name)
	sp.mu.Lock()
	prev, hadPrev := sp.held[sp.current]
	prevVersion := sp.current
	sp.held[version], sp.current = adapter{name, dir}, version
	retirePrev := hadPrev && !sp.versioned && prevVersion != version
	if retirePrev {
		delete(sp.held, prevVersion)
	}
	sp.mu.Unlock()
	if retirePrev {
		sp.retire(ctx, prev.name, prev.dir)
	}
	return nil
}

// retire unloads an adapter no request uses any more and removes its
// directory (unless server.keep_adapters). A failed unload is only
// logged: the server keeps an adapter that nothing samples.
func (sp *sampler) retire(ctx context.Context, name, dir string) {
	if err := sp.client.UnloadLoRA(ctx, name); err != nil {
		sp.log.Warn("the server did not unload an old adapter", "adapter", name, "err", err)
	}
	if !sp.keep {
		if err := os.RemoveAll(dir); err != nil {
			sp.log.Warn("removing an old adapter's directory", "dir", dir, "err", err)
		}
	}
}

// Close implements train.Sampler: it unloads the adapters it holds,
// within a short time of its own (the run may be ending because the
// server went away), and closes the client.
func (sp *sampler) Close() error {
	sp.mu.Lock()
	held := sp.held
	sp.held, sp.current = map[int]adapter{}, -1
	sp.mu.Unlock()
	if len(held) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		for _, v := range slices.Sorted(maps.Keys(held)) {
			sp.retire(ctx, held[v].name, held[v].dir)
		}
		cancel()
	}
	return sp.client.Close()
}
