package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/agentrl/agentrl/gateway"
	"github.com/agentrl/agentrl/train"
)

// runGateway trains an agent program that speaks the OpenAI API: it
// serves the run's policy through the gateway, hands out the environment's
// levels as tasks and trains on the episodes the program plays (package
// gateway, docs/gateway.md).
func runGateway(ctx context.Context, args []string, s stdio) error {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(s.err)
	configPath := fs.String("config", "configs/gateway/countdown.yaml", "YAML run config with a gateway section")
	listen := fs.String("listen", "", "listen address (overrides gateway.listen)")
	var sets overrides
	fs.Var(&sets, "set", "config override key=value with a dotted key, e.g. algo.lr=3e-4 (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(s.err, "usage: trainer gateway [-config FILE] [-set key=value ...] [-listen ADDR]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return parseError(err)
	}
	if fs.NArg() > 0 {
		return usageErrorf("unexpected arguments %q", fs.Args())
	}
	data, err := os.ReadFile(*configPath)
	if err != nil {
		return err
	}
	cfg, gc, err := gateway.ParseConfig(data, sets)
	if err != nil {
		return fmt.Errorf("%s: %w", *configPath, err)
	}
	if *listen != "" {
		gc.Listen = *listen
	}
	log := slog.New(slog.NewTextHandler(s.err, nil))
	return gateway.Run(ctx, cfg, gc, gateway.RunOptions{Train: train.Options{Logger: log, Console: s.out, ConfigPath: *configPath}})
}
