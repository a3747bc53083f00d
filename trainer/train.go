package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"

	"github.com/agentrl/agentrl/train"
)

func runTrain(ctx context.Context, args []string, s stdio) error {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(s.err)
	configPath := fs.String("config", "configs/sokoban.yaml", "YAML run config")
	out := fs.String("out", "", "run directory (overrides run.out)")
	dryRun := fs.Bool("dry-run", false, "print the resolved config and exit")
	var sets overrides
	fs.Var(&sets, "set", "config override key=value with a dotted key, e.g. algo.lr=3e-4 (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(s.err, "usage: trainer [train] [-config FILE] [-set key=value ...] [-out DIR] [-dry-run]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return parseError(err)
	}
	if fs.NArg() > 0 {
		return usageErrorf("unexpected arguments %q", fs.Args())
	}
	if *out != "" {
		sets = append(sets, "run.out="+*out)
	}
	cfg, err := train.Load(*configPath, sets)
	if err != nil {
		return err
	}
	if *dryRun {
		y, err := cfg.YAML()
		if err != nil {
			return err
		}
		fmt.Fprint(s.out, y)
		return nil
	}
	t, err := train.New(cfg, train.Options{Logger: slog.New(slog.NewTextHandler(s.err, nil)), Console: s.out, ConfigPath: *configPath})
	if err != nil {
		return err
	}
	return t.Run(ctx)
}
