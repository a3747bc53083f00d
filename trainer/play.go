package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// playStep is one line of `trainer play -json` output. Step 0 is the reset.
type playStep struct {
	Step            int                `json:"step"`
	Action          string             `json:"action,omitempty"`
	Rationale       string             `json:"rationale,omitempty"`
	Observation     string             `json:"observation"`
	Reward          float64            `json:"reward"`
	Return          float64            `json:"return"`
	Done            bool               `json:"done"`
	Success         bool               `json:"success"`
	ActionValid     bool               `json:"action_valid"`
	ActionEffective bool               `json:"action_effective"`
	Metrics         map[string]float64 `json:"metrics,omitempty"`
}

func runPlay(ctx context.Context, args []string, s stdio) error {
	fs := flag.NewFlagSet("play", flag.ContinueOnError)
	fs.SetOutput(s.err)
	var (
		envName    = fs.String("env", "", "environment name (default: env.name from -config)")
		configPath = fs.String("config", "", "YAML run config whose env section configures the environment")
		seed       = fs.Uint64("seed", 0, "episode seed")
		levelPath  = fs.String("level", "", "start from a level written in this text file instead of a seed")
		actions    = fs.String("actions", "", "comma-separated actions to replay non-interactively")
		useExpert  = fs.Bool("expert", false, "let the environment's expert act")
		jsonOut    = fs.Bool("json", false, "print one JSON object per step (step 0 is the reset)")
		list       = fs.Bool("list", false, "list the registered environments and exit")
		maxSteps   = fs.Int("max-steps", 200, "stop after this many steps")
		sets       overrides
	)
	fs.Var(&sets, "set", "environment config override key=value (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(s.err, "usage: trainer play [-env NAME | -config FILE] [-seed N | -level FILE] [-actions a,b,c | -expert] [-json]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return parseError(err)
	}
	if fs.NArg() > 0 {
		return usageErrorf("unexpected arguments %q", fs.Args())
	}
	if *list {
		for _, name := range envs.Names() {
			fmt.Fprintf(s.out, "%-12s %s\n", name, envs.Description(name))
		}
		return nil
	}
	if *useExpert && *actions != "" {
		return usageErrorf("-expert and -actions are exclusive")
	}
	doc, err := loadConfigDoc(*configPath, sets, "env.config")
	if err != nil {
		return err
	}
	factory, err := envFactory(doc, *envName)
	if err != nil {
		return err
	}
	env, err := factory.New()
	if err != nil {
		return err
	}
	if c, ok := env.(io.Closer); ok {
		defer c.Close() // a remote session
	}

	var obs string
	if *levelPath != "" {
		loader, ok := env.(envs.LevelLoader)
		if !ok {
			return usageErrorf("environment %q cannot load levels from text", factory.Name())
		}
		text, err := os.ReadFile(*levelPath)
		if err != nil {
			return err
		}
		if obs, err = loader.LoadLevel(string(text)); err != nil {
			return fmt.Errorf("%s: %w", *levelPath, err)
		}
	} else if obs, err = env.Reset(*seed); err != nil {
		return err
	}

	p := &player{env: env, out: s.out, json: *jsonOut}
	if !*jsonOut {
		fmt.Fprintf(s.out, "%s\n\n", env.Instruction())
		if a := env.Actions(); len(a) > 0 {
			fmt.Fprintf(s.out, "Actions: %s\n\n", strings.Join(a, ", "))
		}
	}
	if err := p.emit(playStep{Observation: obs}); err != nil {
		return err
	}

	switch {
	case *useExpert:
		expert, ok := env.(envs.Expert)
		if !ok {
			return usageErrorf("environment %q has no expert", factory.Name())
		}
		rng := envs.NewRand(*seed, 0xe4e47)
		for i := 0; !p.done && i < *maxSteps; i++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			advice, err := expert.Advise(1, rng)
			if err != nil {
				return fmt.Errorf("expert: %w", err)
			}
			if len(advice.Actions) == 0 {
				return errors.New("expert: no action for a state that is not terminal")
			}
			if err := p.step(advice.Actions[0], advice.Rationale); err != nil {
				return err
			}
		}
	case *actions != "":
		for i, a := range strings.Split(*actions, ",") {
			if p.done || i >= *maxSteps || ctx.Err() != nil {
				break
			}
			if err := p.step(a, ""); err != nil {
				return err
			}
		}
	default:
		if err := p.interactive(ctx, s.in, *maxSteps); err != nil {
			return err
		}
	}
	if !*jsonOut {
		fmt.Fprintf(s.out, "episode over: steps=%d return=%.2f success=%v\n", p.steps, p.ret, p.success)
	}
	return nil
}

// player drives one episode and prints each step.
type player struct {
	env     envs.Env
	out     io.Writer
	json    bool
	steps   int
	ret     float64
	done    bool
	success bool
}

func (p *player) step(action, rationale string) error {
	res, err := p.env.Step(action)
	if err != nil {
		return err
	}
	if res.Info.ActionValid {
		p.steps++
	}
	p.ret += res.Reward
	p.done, p.success = res.Done, res.Info.Success
	return p.emit(playStep{
		Step: p.steps, Action: action, Rationale: rationale, Observation: res.Observation,
		Reward: res.Reward, Return: p.ret, Done: res.Done, Success: res.Info.Success,
		ActionValid: res.Info.ActionValid, ActionEffective: res.Info.ActionEffective, Metrics: res.Info.Metrics,
	})
}

func (p *player) emit(st playStep) error {
	if p.json {
		return json.NewEncoder(p.out).Encode(st)
	}
	if st.Action != "" {
		fmt.Fprintf(p.out, "> %s\n", st.Action)
		if st.Rationale != "" {
			fmt.Fprintf(p.out, "  (%s)\n", st.Rationale)
		}
		if !st.ActionValid {
			fmt.Fprintln(p.out, "  invalid action: nothing changed")
		}
		fmt.Fprintf(p.out, "  reward %+.2f  return %.2f  done %v  success %v\n", st.Reward, st.Return, st.Done, st.Success)
	}
	_, err := fmt.Fprintf(p.out, "%s\n\n", st.Observation)
	return err
}

// interactive reads one action per line until the episode ends, the input
// ends, or the user types "quit".
func (p *player) interactive(ctx context.Context, in io.Reader, maxSteps int) error {
	sc := bufio.NewScanner(in)
	for i := 0; !p.done && i < maxSteps; i++ {
		if !p.json {
			fmt.Fprint(p.out, "action> ")
		}
		if !sc.Scan() {
			return sc.Err()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		line := strings.TrimSpace(sc.Text())
		switch line {
		case "":
			continue
		case "quit", "exit":
			return nil
		}
		if err := p.step(line, ""); err != nil {
			return err
		}
	}
	return nil
}
