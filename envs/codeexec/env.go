// Package codeexec is a code-execution environment in the style of RAGEN's
// DeepCoder: the agent writes a function, the environment runs it against
// hidden tests, and the reward is the fraction of tests passed.
//
// Programs are written in Starlark, a deterministic Python dialect with a
// Go interpreter (go.starlark.net), so they run in-process, hermetically and
// under step, time and allocation limits (see Sandbox) instead of in a
// container. Tasks are generated from the seed out of a catalogue of
// parameterised families (list, string and arithmetic functions; see
// FamilyNames); expected outputs come from Go reference implementations,
// and a Starlark reference solution per task serves as the expert.
//
// An episode allows Config.MaxAttempts submissions. After one that fails
// some tests the observation lists the failures (input, expected, got or
// the error), and the agent may submit again. The reward of a step is the
// improvement of the best pass fraction so far, so the undiscounted return
// of an episode is its best pass fraction: retrying is never punished, and
// a regression earns 0 rather than a negative reward. Success means every
// test passed.
package codeexec

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

func init() {
	envs.MustRegister("codeexec", envs.Registration[Config]{
		Description: "code execution: write a Starlark function that passes hidden tests (RAGEN DeepCoder-style)",
		Default:     DefaultConfig,
		New: func(cfg Config) (envs.Env, error) {
			return New(cfg)
		},
	})
}

// Random stream labels for envs.NewRand: the family draw and the task's
// parameters and tests use separate streams, so that GenerateTask for the
// drawn family reproduces the environment's task.
const (
	streamFamily = 0x63652d66616d // "ce-fam"
	streamTask   = 0x63652d7461736b
)

// Env is one code-execution episode at a time. It implements envs.Env and
// envs.Expert. It is not safe for concurrent use; separate Envs are.
type Env struct {
	cfg      Config
	fams     []family
	sandbox  *Sandbox
	task     *Task
	attempts int
	best     float64
	feedback string // the last submission's feedback, "" before the first
	started  bool
	done     bool
}

var (
	_ envs.Env    = (*Env)(nil)
	_ envs.Expert = (*Env)(nil)
)

// New builds an environment from a validated configuration.
func New(cfg Config) (*Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	fams := cfg.families()
	if len(fams) == 0 {
		return nil, fmt.Errorf("tasks: no task family matches families %v", cfg.Families)
	}
	return &Env{cfg: cfg, fams: fams, sandbox: NewSandbox(cfg.Limits())}, nil
}

// Config returns the environment's configuration.
func (e *Env) Config() Config { return e.cfg }

// Task returns the current task, nil before the first Reset.
func (e *Env) Task() *Task { return e.task }

// Reset draws a task family and a task from seed.
func (e *Env) Reset(seed uint64) (string, error) {
	f := e.fams[envs.NewRand(seed, streamFamily).IntN(len(e.fams))]
	e.task = buildTask(f, levels[e.cfg.Difficulty], envs.NewRand(seed, streamTask))
	e.attempts, e.best, e.feedback = 0, 0, ""
	e.started, e.done = true, false
	return e.Render(), nil
}

// Actions returns nil: actions are programs.
func (e *Env) Actions() []string { return nil }

// Instruction describes the task format and the Starlark dialect.
func (e *Env) Instruction() string {
	var b strings.Builder
	b.WriteString("You are given a programming task. Write the requested function in Starlark, a small dialect of Python. ")
	b.WriteString("Reply with the complete function definition (helper functions are allowed), preferably in a ```python code block. ")
	b.WriteString("It is run on hidden tests; your reward is the fraction of tests it passes. ")
	fmt.Fprintf(&b, "You have %d attempt(s); after a failed attempt you see which tests failed and may submit a corrected program.\n", e.cfg.MaxAttempts)
	b.WriteString("Starlark differs from Python: no imports, classes, try/except, generators, f-strings, ** operator or chained comparisons (a < b < c); ")
	b.WriteString("strings are not iterable (use s.elems() for characters, range(len(s)) for indices); / is float division, use // for integers; ")
	b.WriteString("module-level variables are frozen after loading (use local variables); the built-ins are len, range, sorted, reversed, enumerate, zip, min, max, abs, any, all, str, int, list, dict, set, tuple and a few more.")
	if e.cfg.AllowWhile {
		b.WriteString(" while loops are allowed.")
	} else {
		b.WriteString(" There are no while loops: use for loops over range(...) with break.")
	}
	if e.cfg.AllowRecursion {
		fmt.Fprintf(&b, " Recursion is allowed up to %d nested calls.", e.cfg.MaxCallDepth)
	} else {
		b.WriteString(" Functions may not call themselves (no recursion).")
	}
	fmt.Fprintf(&b, " Each test call may run at most %d Starlark steps.", e.cfg.MaxSteps)
	return b.String()
}

// Render shows the task and, after a submission, its feedback.
func (e *Env) Render() string {
	if e.task == nil {
		return ""
	}
	t := e.task
	var b strings.Builder
	fmt.Fprintf(&b, "Task: write %s\n%s\n", t.Signature(), t.Spec)
	if t.Visible > 0 {
		b.WriteString("Examples:\n")
		for _, tc := range t.Tests[:t.Visible] {
			fmt.Fprintf(&b, "  %s == %s\n", tc.Call(t.Func), toStarlark(tc.Want).String())
		}
	}
	fmt.Fprintf(&b, "Attempts left: %d of %d.", e.cfg.MaxAttempts-e.attempts, e.cfg.MaxAttempts)
	if e.feedback != "" {
		b.WriteString("\n")
		b.WriteString(e.feedback)
	}
	return b.String()
}

// fenceRE matches a fenced code block; the info string may name any
// language (python, starlark, py) or none.
var fenceRE = regexp.MustCompile("(?s)```[ \\t]*([A-Za-z0-9_+-]*)[^\\n]*\\n(.*?)(?:```|$)")

// ExtractProgram returns the program in an action: the first fenced code
// block that defines fn (else the first fenced block), or the whole action
// when it has no fence.
func ExtractProgram(action, fn string) string {
	blocks := fenceRE.FindAllStringSubmatch(action, -1)
	if len(blocks) == 0 {
		return strings.TrimSpace(action)
	}
	for _, m := range blocks {
		if strings.Contains(m[2], "def "+fn) {
			return strings.TrimSpace(m[2])
		}
	}
	return strings.TrimSpace(blocks[0][2])
}

// Step grades one submitted program. An action with no program text is an
// invalid step (nothing changes, no attempt is used); every other action,
// including one that does not compile, uses an attempt and is scored.
func (e *Env) Step(action string) (envs.StepResult, error) {
	if !e.started {
		return envs.StepResult{}, envs.ErrNotReset
	}
	if e.done {
		return envs.StepResult{}, envs.ErrEpisodeDone
	}
	src := ExtractProgram(action, e.task.Func)
	if src == "" {
		return envs.StepResult{Observation: e.Render()}, nil
	}
	t := e.task
	rep := e.sandbox.Evaluate(src+"\n", t.Func, t.Tests)
	e.attempts++
	total := len(t.Tests)
	frac := float64(rep.Passed) / float64(total)
	reward := max(frac-e.best, 0)
	e.best = max(e.best, frac)
	success := rep.Passed == total
	e.done = success || e.attempts >= e.cfg.MaxAttempts
	e.feedback = e.describe(rep)
	return envs.StepResult{
		Observation: e.Render(),
		Reward:      reward,
		Done:        e.done,
		Info: envs.Info{
			Success:         success,
			ActionValid:     true,
			ActionEffective: true,
			Metrics: map[string]float64{
				"tests_passed":  float64(rep.Passed),
				"tests_total":   float64(total),
				"pass_fraction": frac,
				"compile_error": b2f(rep.CompileError != ""),
				"timeout":       b2f(rep.Timeout),
			},
		},
	}, nil
}

// maxErrorText caps each error message in the feedback.
const maxErrorText = 300

// describe writes the feedback on a submission: the score and up to
// FeedbackFailures failed tests with their input, expected value and what
// came back instead.
func (e *Env) describe(rep Report) string {
	t := e.task
	var b strings.Builder
	fmt.Fprintf(&b, "Attempt %d: ", e.attempts)
	if rep.CompileError != "" {
		fmt.Fprintf(&b, "the program could not be loaded, 0/%d tests passed.\n%s", len(t.Tests), truncate(rep.CompileError, maxErrorText))
	} else {
		fmt.Fprintf(&b, "%d/%d tests passed.", rep.Passed, len(t.Tests))
		shown := 0
		for i, r := range rep.Results {
			if r.Passed {
				continue
			}
			if shown == e.cfg.FeedbackFailures {
				fmt.Fprintf(&b, "\n(%d more failed tests not shown)", len(t.Tests)-rep.Passed-shown)
				break
			}
			shown++
			tc := t.Tests[i]
			fmt.Fprintf(&b, "\nFailed: %s expected %s", truncate(tc.Call(t.Func), maxShownValue), toStarlark(tc.Want).String())
			if r.Err != "" {
				fmt.Fprintf(&b, ", error: %s", truncate(r.Err, maxErrorText))
			} else {
				fmt.Fprintf(&b, ", got %s", r.Got)
			}
		}
	}
	if rep.Output != "" {
		fmt.Fprintf(&b, "\nPrinted output:\n%s", truncate(strings.TrimRight(rep.Output, "\n"), 500))
	}
	switch {
	case rep.Passed == len(t.Tests):
		b.WriteString("\nAll tests passed.")
	case e.done:
		b.WriteString("\nNo attempts left.")
	default:
		b.WriteString("\nFix the program and submit the complete function again.")
	}
	return b.String()
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Advise implements envs.Expert: the reference solution of the task, as a
// fenced program, with a rationale naming the task and the approach.
func (e *Env) Advise(maxActions int, rng *rand.Rand) (envs.Advice, error) {
	if !e.started {
		return envs.Advice{}, envs.ErrNotReset
	}
	if e.done {
		return envs.Advice{}, envs.ErrEpisodeDone
	}
	return envs.Advice{
		Actions:   []string{"```python\n" + e.task.Reference + "```"},
		Rationale: e.rationale(rng),
		Brief:     e.brief(),
	}, nil
}
