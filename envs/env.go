// Package envs defines the environment interface every agentrl task implements,
// the registry that builds environments by name from YAML configs, and the
// optional capabilities (experts, level loading) an environment may add.
//
// Environments are text in, text out: Reset renders the initial observation,
// Step takes the action text the agent wrote and returns the next observation,
// a reward, whether the episode is over and a small Info record. An
// environment is reproducible from its seed alone: it owns its random stream
// and never touches a global one.
//
// A malformed action never panics and never returns an error: it is an
// invalid step (Info.ActionValid false, state unchanged, zero reward, not
// counted against the step limit). Errors are reserved for misuse (Step
// before Reset) and for genuine environment failures.
package envs

import (
	"errors"
	"math/rand/v2"

	"github.com/agentrl/agentrl/text/toolcall"
)

// Env is one episode-at-a-time text environment.
//
// Implementations need not be safe for concurrent use; the rollout engine
// gives every sample its own Env. An environment that holds resources (a
// remote session) also implements io.Closer: whoever made it closes it when
// done with it, as the rollout engine does after every episode.
type Env interface {
	// Reset starts a new episode determined entirely by seed and returns the
	// initial observation.
	Reset(seed uint64) (observation string, err error)
	// Step applies one action written by the agent.
	Step(action string) (StepResult, error)
	// Render returns the current observation text.
	Render() string
	// Instruction is the task description shown to the agent once, before
	// the first observation (the system prompt's environment part).
	Instruction() string
	// Actions lists the action vocabulary. Free-form environments (search
	// queries, equations, programs) return nil and document the grammar in
	// Instruction instead.
	Actions() []string
}

// StepResult is what one Env.Step returns.
type StepResult struct {
	Observation string
	Reward      float64
	Done        bool
	Info        Info
}

// Info describes the outcome of one step.
type Info struct {
	// Success reports whether the task is solved in the current state.
	Success bool
	// ActionValid is false when the action could not be parsed or is not
	// available in the current state; such a step changes nothing.
	ActionValid bool
	// ActionEffective reports whether the action changed the state.
	ActionEffective bool
	// Metrics holds environment-specific numbers, averaged into training
	// metrics under "env/<name>/<key>". May be nil.
	Metrics map[string]float64
}

// Advice is an expert's recommendation for the current state.
type Advice struct {
	// Actions are the recommended next actions, best first, each a member of
	// Env.Actions (or a well-formed free-form action).
	Actions []string
	// Rationale is a short explanation that names the concrete state (where
	// things are, what the plan is). It must depend on the state so that a
	// model trained to reproduce it learns to read its input.
	Rationale string
	// Brief is a terse, still state-specific form of the rationale (the key
	// positions in a few tokens, e.g. "P4,3 X3,3 O1,3"), for small models
	// trained from scratch, where every generated token costs. Empty when
	// the environment offers none; Rationale serves then.
	Brief string
}

// Expert is implemented by environments that can say what to do next.
type Expert interface {
	// Advise returns the best next actions and a rationale. At most
	// maxActions actions are returned (all remaining ones if maxActions <= 0).
	// rng picks among several phrasings of the rationale; a nil rng gives the
	// first phrasing. Advise does not change the environment's state.
	Advise(maxActions int, rng *rand.Rand) (Advice, error)
}

// RandomActor is implemented by environments whose actions are structured
// text rather than a fixed vocabulary (equations, searches and clicks): it
// draws one uniformly random well-formed action for the current state, so
// that a random-policy baseline plays the task rather than typing noise.
// Environments with a vocabulary (Actions) need not implement it. It does
// not change the environment's state.
type RandomActor interface {
	RandomAction(rng *rand.Rand) (string, error)
}

// StateKeyer is implemented by environments that can name their current
// state compactly: equal keys mean equal states, within one level. GiGPO
// groups the turns that start from one state (anchor states) by it; an
// environment without it is keyed by its rendered observation, which is
// right whenever the observation shows the whole state.
type StateKeyer interface {
	StateKey() string
}

// Solver is implemented by environments with an exact, cheap solver: it
// reports the cost-to-go of the current state, the number of actions a
// shortest solution takes from it (0 when solved). Solver credit (CAST)
// rewards each turn by how much it lowered that number.
type Solver interface {
	// CostToGo returns the moves left to solve the task, or solvable false
	// when no sequence of actions solves it any more. An error means the
	// solver cannot tell (a search limit); the turn then gets no credit.
	// It does not change the environment's state.
	CostToGo() (moves int, solvable bool, err error)
}

// RationaleChecker is implemented by environments that can verify what a
// rationale says about the current state: the facts their Advice.Brief
// states ("P4,3 X3,3 O1,3": where the player, the boxes, the targets are).
// It is ground truth for reasoning that MI only estimates: whether the
// model read its input correctly.
type RationaleChecker interface {
	// CheckRationale reports, for every fact of the brief form, whether
	// text states it exactly as the current state has it (a fact text does
	// not mention is wrong). It does not change the state.
	CheckRationale(text string) map[string]bool
}

// LevelLoader is implemented by environments whose episodes can start from a
// level written as text (a Sokoban board, a FrozenLake map).
type LevelLoader interface {
	// LoadLevel parses text and resets the environment to that level,
	// returning the initial observation. Malformed text is an error that
	// names the problem and leaves the environment as it was.
	LoadLevel(text string) (observation string, err error)
}

// ErrNotReset is returned by Step and Advise when no episode has started.
var ErrNotReset = errors.New("envs: Step called before Reset")

// ErrEpisodeDone is returned by Step when the episode has already ended.
var ErrEpisodeDone = errors.New("envs: Step called after the episode ended")

// NewRand returns the random stream an environment uses for seed. Every
// environment derives its randomness from this function (with a stream
// label of its own) so that a seed means the same thing everywhere.
func NewRand(seed uint64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream^0x9e3779b97f4a7c15))
}

// ToolUser is implemented by environments whose actions can be tool calls:
// with rollout.tools on, the rollout engine offers Tools to the policy
// (through its chat template's tools, or described in the system prompt
// for templates without any), reads the calls in its reply, steps the
// environment with each call's action and answers each call with the
// step's observation as a tool message. Step stays the one way to act, so
// an environment served over OpenEnv keeps working.
type ToolUser interface {
	// Tools declares the calls, with the JSON schemas of their arguments.
	Tools() []toolcall.Tool
	// ActionOf turns a call into the action text Step takes; an error
	// says why the call is no action (it is reported to the model as the
	// call's result, and the turn is an invalid step).
	ActionOf(call toolcall.Call) (string, error)
	// CallOf is ActionOf's inverse, so that experts and baselines whose
	// advice is action text can write calls.
	CallOf(action string) (toolcall.Call, error)
}
