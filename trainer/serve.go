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
	"time"

	"github.com/agentrl/agentrl/policy/local"
	"github.com/agentrl/agentrl/policy/serve"
)

// serveShutdownGrace is how long a stopping server waits for the requests
// in flight before closing their connections.
const serveShutdownGrace = 10 * time.Second

// runServe serves a native checkpoint over vLLM's OpenAI-compatible HTTP API
// until ctx ends (SIGINT or SIGTERM), then shuts down gracefully.
func runServe(ctx context.Context, args []string, s stdio) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(s.err)
	var (
		checkpoint  = fs.String("checkpoint", "", "native checkpoint directory with tokenizer.json (required)")
		addr        = fs.String("addr", "127.0.0.1:8000", "listen address; the default binds loopback only")
		apiKey      = fs.String("api-key", "", "bearer token required on /v1 routes (default $AGENTRL_API_KEY)")
		model       = fs.String("model", "", "served model name (default: the checkpoint directory's base name)")
		maxBatch    = fs.Int("max-batch", 256, "most sequences sampled in one batched forward pass")
		batchWindow = fs.Duration("batch-window", 3*time.Millisecond, "longest wait for requests already arriving to join a batch (0: none)")
		maxTokens   = fs.Int("max-tokens", 0, "largest max_tokens a request may ask for (0: the context length)")
		maxN        = fs.Int("max-n", 128, "largest n (samples per prompt) of a request")
		promptRanks = fs.Bool("prompt-ranks", false, "compute the rank of prompt_logprobs entries (costly: one prompt forward per position)")
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

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	info := p.Info()
	log.Info("serving", "url", "http://"+ln.Addr().String()+"/v1", "model", srv.Model(),
		"max_model_len", info.MaxContext, "api_key", *apiKey != "", "checkpoint", *checkpoint)
	if host, _, err := net.SplitHostPort(ln.Addr().String()); err == nil {
		if ip := net.ParseIP(host); ip != nil && !ip.IsLoopback() && *apiKey == "" {
			log.Warn("listening beyond loopback without an API key; set -api-key or AGENTRL_API_KEY")
		}
	}

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "grace", serveShutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), serveShutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
		log.Warn("requests cut short at shutdown", "err", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	log.Info("stopped")
	return nil
}
