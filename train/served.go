package train

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentrl/agentrl/client/vllm"
	"github.com/agentrl/agentrl/internal/atomicdir"
	"github.com/agentrl/agentrl/policy"
)

// adaptersDir is the default server.adapter_dir inside the run directory.
const adaptersDir = "adapters"

// servedPolicy samples a run's rollouts on a server (server.url) that
// serves model.init and loads the learner's LoRA adapters at run time.
// Weight sync is explicit and versioned: version v of the weights (the
// learner after v completed steps) is written as a PEFT adapter directory
// <adapter_dir>/<prefix>-v<v>, loaded under that name (POST
// /v1/load_lora_adapter), and sampled by naming it as the model; the
// previous version is then unloaded and its directory removed. prefix is
// the run directory's name and a random session id, so that two runs, or
// two sessions of one run (a resume after a crash that left an adapter
// loaded), never reuse a name on one server. Rollouts are synchronous per
// step, so no request uses the previous version once the next is loaded.
type servedPolicy struct {
	client *vllm.Client
	saver  adapterSaver
	log    *slog.Logger
	// dir is the local adapter directory (absolute); remote joins a
	// version's name to the directory as the server sees it.
	dir    string
	remote func(name string) string
	keep   bool
	prefix string

	// current is the adapter served now, currentDir its directory.
	current, currentDir string
}

// serverProbe is the text the start-up checks tokenize and score: words,
// digits, punctuation, grid symbols and text outside ASCII, the kinds of
// text the environments write.
const serverProbe = "Probe: the player (P) stands left of the box (X) at row 2, column 3; 42 moves left. " +
	"Ünïcödé — 世界 ✓\n#####\n#_P_#\n<think>push right</think><answer>Right</answer>"

// openServed connects to the server, checks that it serves the model the
// learner trains (the tokenizer and chat template through /tokenize, the
// context length), loads the learner's current adapters as the given
// version, and checks the served policy's scores of a probe against the
// learner's (server.probe_tolerance).
func openServed(ctx context.Context, cfg Config, l Learner, version int, log *slog.Logger) (_ *servedPolicy, err error) {
	sc := cfg.Server
	saver, ok := l.(adapterSaver)
	if !ok {
		return nil, errors.New("server.url: this learner cannot export LoRA adapters for a server")
	}
	local := l.Policy()
	li := local.Info()
	key := sc.APIKey
	if key == "" {
		key = os.Getenv("AGENTRL_API_KEY")
	}
	// The learner's stop tokens, so that the served policy ends replies
	// exactly where the learner's would.
	opts := vllm.Options{BaseURLs: sc.URLs(), APIKey: key, Model: sc.Model, StopTokens: slices.Clone(li.StopTokens), Logger: log}
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
	if err := checkServedText(ctx, client, local); err != nil {
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
	sp := &servedPolicy{client: client, saver: saver, log: log, dir: dir, remote: remote, keep: sc.KeepAdapters,
		prefix: adapterName(filepath.Base(filepath.Clean(cfg.Run.Out))) + "-" + hex.EncodeToString(id[:])}
	if err := sp.push(ctx, version); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			sp.close()
		}
	}()
	diff, n := math.NaN(), 0
	if sc.ProbeTolerance >= 0 {
		if diff, n, err = probeScores(ctx, client, local); err != nil {
			return nil, fmt.Errorf("server %s: scoring the probe (set server.probe_tolerance negative to skip this check): %w", where, err)
		}
	}
	if sc.ProbeTolerance >= 0 && !(diff <= sc.ProbeTolerance) {
		return nil, fmt.Errorf("server %s: model %q with adapter %s scores a probe %.3g nats per token away from the learner's model.init (%s) on average (%d tokens; server.probe_tolerance is %g): it serves another model with the same tokenizer "+
			"(or computes far less precisely than expected: then raise server.probe_tolerance, or set it negative to skip the check)",
			where, client.BaseModel(), sp.current, diff, cfg.Model.Init, n, sc.ProbeTolerance)
	}
	log.Info("sampling on a server", "url", where, "model", client.BaseModel(), "adapter", sp.current,
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
func checkServedText(ctx context.Context, served, local policy.Policy) error {
	want, err := local.Encode(ctx, serverProbe)
	if err != nil {
		return err
	}
	got, err := served.Encode(ctx, serverProbe)
	if err != nil {
		return fmt.Errorf("/tokenize: %w", err)
	}
	if err := sameTokens("its tokenizer", got, want); err != nil {
		return err
	}
	msgs := []policy.Message{{Role: policy.RoleSystem, Content: "You are a probe."}, {Role: policy.RoleUser, Content: serverProbe}}
	if want, err = local.RenderChat(ctx, msgs, true); err != nil {
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
func probeScores(ctx context.Context, served, local policy.Policy) (float64, int, error) {
	prompt, err := local.RenderChat(ctx, []policy.Message{{Role: policy.RoleUser, Content: serverProbe}}, true)
	if err != nil {
		return 0, 0, err
	}
	reply, err := local.Encode(ctx, "The box is right of the player, so I push right: Right.")
	if err != nil {
		return 0, 0, err
	}
	if stop := local.Info().StopTokens; len(stop) > 0 {
		reply = append(reply, stop[0])
	}
	req := []policy.ScoreRequest{{Prompt: prompt, Continuation: reply}}
	want, err := local.Score(ctx, req)
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

// Policy is the served policy, sampling with the current adapter.
func (sp *servedPolicy) Policy() policy.Policy { return sp.client }

// push writes the learner's adapters as the given version, loads them on
// the server under a new name, switches sampling to it and unloads the
// previous version. The directory is written whole before the server is
// told of it (a temporary directory renamed into place). On failure the
// previous version stays served.
func (sp *servedPolicy) push(ctx context.Context, version int) error {
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
	prev, prevDir := sp.current, sp.currentDir
	sp.current, sp.currentDir = name, dir
	if prev != "" {
		sp.retire(ctx, prev, prevDir)
	}
	return nil
}

// retire unloads an adapter no request uses any more and removes its
// directory (unless server.keep_adapters). A failed unload is only
// logged: the server keeps an adapter that nothing samples.
func (sp *servedPolicy) retire(ctx context.Context, name, dir string) {
	if err := sp.client.UnloadLoRA(ctx, name); err != nil {
		sp.log.Warn("the server did not unload an old adapter", "adapter", name, "err", err)
	}
	if !sp.keep {
		if err := os.RemoveAll(dir); err != nil {
			sp.log.Warn("removing an old adapter's directory", "dir", dir, "err", err)
		}
	}
}

// close unloads the adapter served last, within a short time of its own
// (the run may be ending because the server went away), and closes the
// client.
func (sp *servedPolicy) close() {
	if sp.current != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		sp.retire(ctx, sp.current, sp.currentDir)
		cancel()
		sp.current, sp.currentDir = "", ""
	}
	sp.client.Close()
}
