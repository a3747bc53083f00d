package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentrl/agentrl/client/tinker"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/server/openaiapi"
	"github.com/agentrl/agentrl/server/tinkerapi"
	"github.com/agentrl/agentrl/text/toolcall"
)

// runServe serves a checkpoint (native, or a Hugging Face model directory)
// over vLLM's OpenAI-compatible HTTP API (/v1) and, with -tinker, the
// Tinker training and sampling API (/api/v1, server/tinkerapi) on the
// same listener, until ctx ends (SIGINT or SIGTERM), then shuts down
// gracefully.
func runServe(ctx context.Context, args []string, s stdio) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(s.err)
	var (
		checkpoint  = fs.String("checkpoint", "", "checkpoint directory: native (with the agentrl tokenizer.json) or a Hugging Face model directory (required)")
		addr        = fs.String("addr", "127.0.0.1:8000", "listen address; the default binds loopback only")
		apiKey      = fs.String("api-key", "", "API key required on /v1 (as a bearer token) and /api/v1 (as X-API-Key or a bearer token) (default $AGENTRL_API_KEY)")
		model       = fs.String("model", "", "served model name (default: the checkpoint directory's base name)")
		maxBatch    = fs.Int("max-batch", 256, "most sequences sampled in one batched forward pass")
		batchWindow = fs.Duration("batch-window", 3*time.Millisecond, "longest wait for requests already arriving to join a batch (0: none)")
		maxTokens   = fs.Int("max-tokens", 0, "largest max_tokens a request may ask for (0: the context length)")
		maxN        = fs.Int("max-n", 128, "largest n (samples per prompt) of a request")
		maxReqToks  = fs.Int("max-request-tokens", 0, "most tokens one /v1 request may have the model read and write, summed over its choices (0: the larger of 262144 and 32 × the context)")
		maxReqLPs   = fs.Int("max-request-logprobs", 0, "most log-probabilities one /v1 reply may carry, each reported position counting 1 plus its alternatives (0: the larger of 262144 and 21 × the context)")
		maxLoRAs    = fs.Int("max-loras", 4, "most LoRA adapters loaded at once (-lora and -lora-dir), each a copy of the model's weights")
		toolParser  = fs.String("tool-call-parser", "", "the format tool calls are read and forced in (vLLM's --tool-call-parser): hermes, llama3_json or compact (default: the one the chat template shows, compact for a template without tools)")
		loraDir     = fs.String("lora-dir", "", "enable POST /v1/load_lora_adapter and /v1/unload_lora_adapter, loading only adapters inside this directory (vLLM's VLLM_ALLOW_RUNTIME_LORA_UPDATING)")
		withTinker  = fs.Bool("tinker", true, "also serve the Tinker API (training and sampling) under /api/v1")
		tinkerDir   = fs.String("tinker-dir", "", "the Tinker API's state directory, where saved weights live (default: a temporary directory removed at exit)")
		tkModels    = fs.Int("tinker-max-models", 4, "most Tinker models (create_model) held at once, each a copy of the model's weights with its optimizer state")
		tkTokens    = fs.Int("tinker-max-request-tokens", 0, "most tokens of one Tinker forward or forward_backward request, which also sizes its body limit (0: 16 × the larger of 8192 and the context)")
		tkQuota     = fs.Int64("tinker-disk-quota", 0, "most bytes of saved weights in the Tinker state directory (0: 32 checkpoints of the model with its optimizer state, at least 1 GiB; negative: no quota)")
		tkZstd      = fs.Bool("tinker-zstd", false, "ask Tinker clients to send protobuf forward bodies zstd-compressed (client/config proto_compress_fwdbwd), as hosted Tinker does; they are read either way")
		tkJSONOnly  = fs.Bool("tinker-json-only", false, "speak only the Tinker API's JSON dialect (SDKs up to 0.24.1), as this server did before protobuf: protobuf bodies get 415 and results are JSON")
		readTimeout = fs.Duration("read-timeout", defaultReadTimeout, "longest time to receive a request's headers and body")
		verbose     = fs.Bool("v", false, "log every request")
		loras       loraModules
	)
	fs.Var(&loras, "lora", "NAME=PATH: load the PEFT LoRA adapter at PATH as model NAME at start (repeatable; vLLM's --lora-modules)")
	fs.Usage = func() {
		fmt.Fprintln(s.err, "usage: trainer serve -checkpoint DIR [-addr HOST:PORT] [-api-key KEY] [-model NAME] [-lora-dir DIR] [-lora NAME=PATH ...] [-tinker=false] [-tinker-dir DIR] [limits, below]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return parseError(err)
	}
	switch {
	case fs.NArg() > 0:
		return usageErrorf("unexpected arguments %q", fs.Args())
	case *checkpoint == "":
		return usageErrorf("-checkpoint is required")
	case *maxBatch < 1:
		return usageErrorf("-max-batch must be at least 1, got %d", *maxBatch)
	case *batchWindow < 0:
		return usageErrorf("-batch-window must not be negative, got %v", *batchWindow)
	case *maxTokens < 0:
		return usageErrorf("-max-tokens must not be negative, got %d", *maxTokens)
	case *maxN < 1:
		return usageErrorf("-max-n must be at least 1, got %d", *maxN)
	case *maxReqToks < 0:
		return usageErrorf("-max-request-tokens must not be negative, got %d", *maxReqToks)
	case *maxReqLPs < 0:
		return usageErrorf("-max-request-logprobs must not be negative, got %d", *maxReqLPs)
	case *maxLoRAs < 1:
		return usageErrorf("-max-loras must be at least 1, got %d", *maxLoRAs)
	case *tkModels < 1:
		return usageErrorf("-tinker-max-models must be at least 1, got %d", *tkModels)
	case *tkTokens < 0:
		return usageErrorf("-tinker-max-request-tokens must not be negative, got %d", *tkTokens)
	case *readTimeout <= 0:
		return usageErrorf("-read-timeout must be positive, got %v", *readTimeout)
	}
	if *apiKey == "" {
		*apiKey = os.Getenv("AGENTRL_API_KEY")
	}
	// Routes that write or train (the Tinker API, runtime adapter
	// loading) are for the operator: beyond loopback they need a key.
	if *apiKey == "" && !loopbackOnly(*addr) {
		switch {
		case *loraDir != "":
			return usageErrorf("-lora-dir lets clients make the server read files; listening on %s beyond loopback needs an API key (-api-key or $AGENTRL_API_KEY)", *addr)
		case *withTinker:
			return usageErrorf("the Tinker API (on by default) lets clients train and save weights on this machine; listening on %s beyond loopback needs an API key (-api-key or $AGENTRL_API_KEY), or -tinker=false", *addr)
		}
	}
	if *toolParser != "" {
		if _, err := toolcall.New(*toolParser); err != nil {
			return usageErrorf("-tool-call-parser: %v", err)
		}
	}
	if *loraDir != "" {
		if st, err := os.Stat(*loraDir); err != nil || !st.IsDir() {
			return usageErrorf("-lora-dir %s is not a directory", *loraDir)
		}
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: level}))

	p, err := local.LoadCheckpointNamed(*checkpoint, *model)
	if err != nil {
		return err
	}
	window := *batchWindow
	if window == 0 {
		window = -1 // openaiapi.Options: negative means no waiting
	}
	opts := openaiapi.Options{
		Model: p.Info().Name, APIKey: *apiKey, MaxTokensCap: *maxTokens, MaxN: *maxN,
		MaxRequestTokens: *maxReqToks, MaxRequestLogprobs: *maxReqLPs, MaxAdapters: *maxLoRAs,
		MaxBatch: *maxBatch, BatchWindow: window, Logger: log, ToolCallParser: *toolParser,
	}
	if *loraDir != "" || len(loras) > 0 {
		m := p.Lock()
		adapted := m.LoRA() != nil
		p.Unlock()
		if adapted {
			return fmt.Errorf("-checkpoint %s is itself a LoRA adapter: serve its base model, and load the adapter with -lora NAME=%s", *checkpoint, *checkpoint)
		}
		opts.AdapterDir = *loraDir
		opts.LoadAdapter = func(_ context.Context, dir string) (policy.Policy, error) { return p.WithPEFT(dir, "") }
	}
	srv := openaiapi.New(p, opts)
	defer srv.Close()
	for _, l := range loras {
		if err := srv.AddAdapter(ctx, l.name, l.path, false); err != nil {
			return fmt.Errorf("-lora %s=%s: %w", l.name, l.path, err)
		}
	}

	var handler http.Handler = srv
	var closing func()
	stateDir := ""
	if *withTinker {
		if stateDir = *tinkerDir; stateDir == "" {
			removeOrphanedStateDirs(log)
			if stateDir, err = os.MkdirTemp("", fmt.Sprintf("%s%d-", tinkerTempPrefix, os.Getpid())); err != nil {
				return fmt.Errorf("tinker state directory: %w", err)
			}
			defer os.RemoveAll(stateDir)
			log.Info("tinker: state in a temporary directory, removed at exit: saved weights do not outlive the server (set -tinker-dir to keep them)", "dir", stateDir)
		}
		quota := *tkQuota
		switch {
		case quota == 0:
			quota = tinkerapi.DefaultDiskQuota(p)
		case quota < 0:
			quota = 0 // tinkerapi: no quota
		}
		tk, err := tinkerapi.New(p, tinkerapi.Options{Model: srv.Model(), Dir: stateDir, APIKey: *apiKey, Logger: log,
			MaxModels: *tkModels, MaxRequestTokens: *tkTokens, DiskQuota: quota, CompressForward: *tkZstd, JSONOnly: *tkJSONOnly})
		if err != nil {
			return err
		}
		defer tk.Close()
		handler, closing = mountTinker(srv, tk), func() { tk.Close() }
	}

	info := p.Info()
	return serveUntilDone(ctx, *addr, handler, *apiKey, *readTimeout, log, func(a net.Addr) {
		attrs := []any{"url", "http://" + a.String() + "/v1", "model", srv.Model(),
			"max_model_len", info.MaxContext, "api_key", *apiKey != "", "checkpoint", *checkpoint,
			"adapters", srv.Adapters(), "lora_dir", *loraDir}
		if *withTinker {
			attrs = append(attrs, "tinker_url", "http://"+a.String()+tinker.APIPrefix, "tinker_dir", stateDir)
		}
		log.Info("serving", attrs...)
	}, closing)
}

// mountTinker routes /api/v1 and the paths under it to the Tinker server
// and everything else to the OpenAI-compatible one.
func mountTinker(openai, tk http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", openai)
	mux.Handle(tinker.APIPrefix+"/", tk)
	// Registered too, or ServeMux would redirect it to APIPrefix+"/".
	mux.Handle(tinker.APIPrefix, tk)
	return mux
}

// loraModule is one -lora NAME=PATH.
type loraModule struct{ name, path string }

// loraModules is the repeatable -lora flag.
type loraModules []loraModule

func (l *loraModules) String() string {
	parts := make([]string, len(*l))
	for i, m := range *l {
		parts[i] = m.name + "=" + m.path
	}
	return strings.Join(parts, " ")
}

func (l *loraModules) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	if !ok || name == "" || path == "" {
		return fmt.Errorf("want NAME=PATH, got %q", v)
	}
	for _, m := range *l {
		if m.name == name {
			return fmt.Errorf("adapter name %q given twice", name)
		}
	}
	*l = append(*l, loraModule{name, path})
	return nil
}

// tinkerTempPrefix starts the name of a temporary Tinker state directory,
// followed by the serving process's id.
const tinkerTempPrefix = "agentrl-tinker-"

// removeOrphanedStateDirs removes the temporary Tinker state directories
// of servers that ended without removing theirs (a process killed, or
// one that died of a fatal error, runs no deferred cleanup).
func removeOrphanedStateDirs(log *slog.Logger) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tinkerTempPrefix+"*"))
	for _, dir := range dirs {
		pidText, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(dir), tinkerTempPrefix), "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		if err := os.RemoveAll(dir); err == nil {
			log.Info("tinker: removed the state directory of a server that ended without removing it", "dir", dir, "pid", pid)
		}
	}
}

// processAlive reports whether a process with this id exists (signal 0
// checks without signalling; where that cannot be asked, it says yes).
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, os.ErrPermission) || errors.Is(err, errors.ErrUnsupported)
}
