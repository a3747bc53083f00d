package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/agentrl/agentrl/policy/local"
	"github.com/agentrl/agentrl/policy/serve"
)

// runServe serves a checkpoint (native, or a Hugging Face model directory)
// over vLLM's OpenAI-compatible HTTP API until ctx ends (SIGINT or
// SIGTERM), then shuts down gracefully.
func runServe(ctx context.Context, args []string, s stdio) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(s.err)
	var (
		checkpoint  = fs.String("checkpoint", "", "checkpoint directory: native (with the agentrl tokenizer.json) or a Hugging Face model directory (required)")
		addr        = fs.String("addr", "127.0.0.1:8000", "listen address; the default binds loopback only")
		apiKey      = fs.String("api-key", "", "bearer token required on /v1 routes (default $AGENTRL_API_KEY)")
		model       = fs.String("model", "", "served model name (default: the checkpoint directory's base name)")
		maxBatch    = fs.Int("max-batch", 256, "most sequences sampled in one batched forward pass")
		batchWindow = fs.Duration("batch-window", 3*time.Millisecond, "longest wait for requests already arriving to join a batch (0: none)")
		maxTokens   = fs.Int("max-tokens", 0, "largest max_tokens a request may ask for (0: the context length)")
		maxN        = fs.Int("max-n", 128, "largest n (samples per prompt) of a request")
		promptRanks = fs.Bool("prompt-ranks", false, "compute the rank of a prompt_logprobs prompt token outside the requested top N (costly: one prompt forward per position)")
		verbose     = fs.Bool("v", false, "log every request")
	)
	fs.Usage = func() {
		fmt.Fprintln(s.err, "usage: trainer serve -checkpoint DIR [-addr HOST:PORT] [-api-key KEY] [-model NAME]")
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
	}
	if *apiKey == "" {
		*apiKey = os.Getenv("AGENTRL_API_KEY")
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
		window = -1 // serve.Options: negative means no waiting
	}
	srv := serve.New(p, serve.Options{
		Model: p.Info().Name, APIKey: *apiKey, MaxTokensCap: *maxTokens, MaxN: *maxN,
		MaxBatch: *maxBatch, BatchWindow: window, PromptRanks: *promptRanks, Logger: log,
	})
	defer srv.Close()

	info := p.Info()
	return serveUntilDone(ctx, *addr, srv, *apiKey, log, func(a net.Addr) {
		log.Info("serving", "url", "http://"+a.String()+"/v1", "model", srv.Model(),
			"max_model_len", info.MaxContext, "api_key", *apiKey != "", "checkpoint", *checkpoint)
	}, nil)
}
