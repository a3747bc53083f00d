package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"

	"github.com/agentrl/agentrl/train"
)

func runTrain(ctx context.Context, args []string, s stdio) error {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(s.err)
	configPath := fs.String("config", "configs/sokoban.yaml", "YAML run config")
	out := fs.String("out", "", "run directory (overrides run.out)")
	dryRun := fs.Bool("dry-run", false, "print the resolved config and exit")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof reads it)")
	var sets overrides
	fs.Var(&sets, "set", "config override key=value with a dotted key, e.g. algo.lr=3e-4 (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(s.err, "usage: trainer [train] [-config FILE] [-set key=value ...] [-out DIR] [-dry-run] [-cpuprofile FILE]")
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
	// New checks everything a run would check before it starts (the
	// environment's own config, the learner's model) and writes nothing.
	t, err := train.New(cfg, train.Options{Logger: slog.New(slog.NewTextHandler(s.err, nil)), Console: s.out, ConfigPath: *configPath})
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
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("the CPU profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("the CPU profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	return t.Run(ctx)
}
