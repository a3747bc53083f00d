package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
)

func runTrain(ctx context.Context, args []string, s stdio) error {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(s.err)
	configPath := fs.String("config", "configs/sokoban.yaml", "YAML run config")
	var sets overrides
	fs.Var(&sets, "set", "config override key=value with a dotted key, e.g. env.config.dim_x=8 (repeatable)")
	if err := fs.Parse(args); err != nil {
		return parseError(err)
	}
	if fs.NArg() > 0 {
		return usageErrorf("unexpected arguments %q", fs.Args())
	}
	doc, err := loadConfigDoc(*configPath, sets, "")
	if err != nil {
		return err
	}
	factory, err := envFactory(doc, "")
	if err != nil {
		return fmt.Errorf("%s: %w", *configPath, err)
	}
	fmt.Fprintf(s.out, "config %s: environment %q resolved: %+v\n", *configPath, factory.Name(), factory.Config())
	return errors.New("the training loop is not available in this build yet; " +
		"`trainer play -config " + *configPath + "` plays the configured environment")
}
