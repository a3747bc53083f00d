// Command trainer is the agentrl command line.
//
//	trainer [train] -config configs/sokoban.yaml   train a policy (the default subcommand)
//	trainer play -env sokoban -seed 3              play an environment in the terminal
//	trainer view runs/sokoban                      a web view of a run (curves, transcripts, collapse)
//	trainer gateway -config configs/gateway/countdown.yaml   train an agent program through the OpenAI API
//
// Run `trainer help` for the list of subcommands and `trainer SUBCOMMAND -h`
// for the flags of one.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	_ "github.com/agentrl/agentrl/envs/builtin"        // registers the bundled environments
	_ "github.com/agentrl/agentrl/envs/openenv"        // registers "openenv", environments on a remote OpenEnv server
	_ "github.com/agentrl/agentrl/train/inprocess"     // registers the "native" learner, in this process
	_ "github.com/agentrl/agentrl/train/served"        // registers the "served" sampler (server.url)
	_ "github.com/agentrl/agentrl/train/tinkerlearner" // registers the "tinker" learner (tinker.url)
)

// subcommand is one verb of the CLI.
type subcommand struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, io stdio) error
}

// stdio bundles the streams a subcommand talks to, so tests can drive it.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

func subcommands() []subcommand {
	return []subcommand{
		{"train", "train a policy from a YAML config (default)", runTrain},
		{"eval", "evaluate a checkpoint, a vLLM server or an OpenAI-compatible endpoint on an environment", runEval},
		{"play", "play an environment in the terminal, replay actions, or watch its expert", runPlay},
		{"serve", "serve a policy checkpoint over an OpenAI-compatible HTTP API and the Tinker training API", runServe},
		{"serve-env", "serve environments over OpenEnv's HTTP/WebSocket protocol", runServeEnv},
		{"plot", "draw PNG curves of a run directory's metrics", runPlot},
		{"report", "compare finished runs: arms over seeds, curves with intervals, diagnostics against success", runReport},
		{"gateway", "train an agent program that drives the policy through the OpenAI API (see docs/gateway.md)", runGateway},
		{"view", "a web view of run directories: curves, transcripts, collapse heatmaps, summaries (or -export FILE.html)", runView},
	}
}

// exitInterrupted is the exit code of a command stopped by an interrupt
// (128 + SIGINT, as a shell reports it).
const exitInterrupted = 130

// errUsage marks errors caused by the command line itself; main exits 2.
var errUsage = errors.New("usage error")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var finished atomic.Bool
	go func() {
		// The first interrupt asks the command to stop cleanly (train
		// finishes its step and saves a checkpoint, which with a remote
		// policy can take a while); from then on the signals have their
		// default effect, so a second one ends the process at once.
		<-ctx.Done()
		stop()
		if !finished.Load() {
			fmt.Fprintln(os.Stderr, "interrupted: stopping cleanly (interrupt again to quit at once)")
		}
	}()
	code := dispatch(ctx, os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr})
	finished.Store(true)
	stop()
	os.Exit(code)
}

// dispatch runs the subcommand named by args[0] (train when args start with
// a flag or are empty) and returns the process exit code.
func dispatch(ctx context.Context, args []string, s stdio) int {
	name := "train"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if name == "help" {
		printHelp(s.out)
		return 0
	}
	for _, sc := range subcommands() {
		if sc.name != name {
			continue
		}
		err := sc.run(ctx, args, s)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			fmt.Fprintf(s.err, "trainer %s: %v\n", name, err)
			return 2
		case ctx.Err() != nil && err == ctx.Err():
			// Stopped by an interrupt, as asked, and nothing else went
			// wrong: what the command saved it has said already.
			fmt.Fprintf(s.err, "trainer %s: interrupted\n", name)
			return exitInterrupted
		default:
			fmt.Fprintf(s.err, "trainer %s: %v\n", name, err)
			return 1
		}
	}
	fmt.Fprintf(s.err, "trainer: unknown subcommand %q\n\n", name)
	printHelp(s.err)
	return 2
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "usage: trainer [subcommand] [flags]")
	fmt.Fprintln(w)
	for _, sc := range subcommands() {
		fmt.Fprintf(w, "  %-8s %s\n", sc.name, sc.summary)
	}
	fmt.Fprintln(w, "\nRun 'trainer SUBCOMMAND -h' for the flags of one.")
}

// usageErrorf builds an error that makes the CLI exit with status 2.
func usageErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// parseError marks a flag-parsing failure as a usage error; -h stays help.
func parseError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return fmt.Errorf("%w: %v", errUsage, err)
}
