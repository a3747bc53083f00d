package alfworld

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// Observation formats.
const (
	// FormatALFWorld is ALFWorld's text: the feedback of the last command
	// (the welcome, the room and the task at the start), then RAGEN's
	// "Admissible actions: [...]" list. The task is said only once, so the
	// agent needs the conversation.
	FormatALFWorld = "alfworld"
	// FormatCompact restates the state every turn in a few lines: the
	// task, the place and what is visible there, the object in hand, the
	// task-relevant objects seen elsewhere, the places not yet searched and
	// the actions possible here. It suits small models that see only the
	// last turn.
	FormatCompact = "compact"
)

// Config is the YAML configuration of the "alfworld" environment.
type Config struct {
	// TaskTypes are the task types episodes draw from, uniformly, by
	// ALFWorld's names (default all six).
	TaskTypes []string `yaml:"task_types"`
	// Split is "seen" (default) or "unseen": the held-out (room, object)
	// combinations.
	Split string `yaml:"split"`
	// Scene is "full" (default, ALFWorld-like rooms) or "small".
	Scene string `yaml:"scene"`
	// MaxSteps ends an unfinished episode after this many valid actions
	// (default 50, ALFWorld's max_nb_steps_per_episode).
	MaxSteps int `yaml:"max_steps"`
	// ObservationFormat is "alfworld" (default) or "compact".
	ObservationFormat string `yaml:"observation_format"`
	// SuccessReward is paid when the goal is reached (default 10, RAGEN's
	// score); every other step pays 0.
	SuccessReward float64 `yaml:"success_reward"`
}

// DefaultConfig is ALFWorld as RAGEN runs it: all six task types, seen
// split, full scenes, 50 steps, ALFWorld's text, reward 10 on success.
func DefaultConfig() Config {
	return Config{
		TaskTypes:         slices.Clone(taskTypeNames[:]),
		Split:             SplitSeen,
		Scene:             SceneFull,
		MaxSteps:          50,
		ObservationFormat: FormatALFWorld,
		SuccessReward:     10,
	}
}

// Validate checks every key and names the offending one with its allowed
// values.
func (c *Config) Validate() error {
	if len(c.TaskTypes) == 0 {
		return fmt.Errorf("task_types: must list at least one of %s", strings.Join(taskTypeNames[:], ", "))
	}
	seen := map[string]bool{}
	for _, name := range c.TaskTypes {
		if _, ok := ParseTaskType(name); !ok {
			return fmt.Errorf("task_types: %q is not one of %s", name, strings.Join(taskTypeNames[:], ", "))
		}
		if seen[name] {
			return fmt.Errorf("task_types: %q is listed twice", name)
		}
		seen[name] = true
	}
	if c.Split != SplitSeen && c.Split != SplitUnseen {
		return fmt.Errorf("split: must be %q or %q, got %q", SplitSeen, SplitUnseen, c.Split)
	}
	if c.Scene != SceneFull && c.Scene != SceneSmall {
		return fmt.Errorf("scene: must be %q or %q, got %q", SceneFull, SceneSmall, c.Scene)
	}
	if c.MaxSteps < 1 {
		return fmt.Errorf("max_steps: must be at least 1 (ALFWorld uses 50), got %d", c.MaxSteps)
	}
	if c.ObservationFormat != FormatALFWorld && c.ObservationFormat != FormatCompact {
		return fmt.Errorf("observation_format: must be %q or %q, got %q", FormatALFWorld, FormatCompact, c.ObservationFormat)
	}
	if c.SuccessReward <= 0 {
		return fmt.Errorf("success_reward: must be > 0, got %v", c.SuccessReward)
	}
	return nil
}

// taskTypes resolves TaskTypes (validated).
func (c *Config) taskTypes() []TaskType {
	out := make([]TaskType, len(c.TaskTypes))
	for i, name := range c.TaskTypes {
		out[i], _ = ParseTaskType(name)
	}
	return out
}

func init() {
	envs.MustRegister("alfworld", envs.Registration[Config]{
		Description: "ALFWorld: household tasks in generated rooms, ALFWorld's six task types and command grammar (RAGEN)",
		Default:     DefaultConfig,
		New: func(cfg Config) (envs.Env, error) {
			return New(cfg)
		},
	})
}

// streamScene labels the random stream scenes are drawn from.
const streamScene = 0x616c66776f726c64 // "alfworld"

// Env is one ALFWorld episode at a time. It implements envs.Env,
// envs.Expert, envs.RandomActor, envs.Solver and envs.StateKeyer. It is
// not safe for concurrent use.
type Env struct {
	cfg      Config
	types    []TaskType
	w        *world
	feedback string // ALFWorld's text for the last valid command
	steps    int
	started  bool
	done     bool
}

var (
	_ envs.Env         = (*Env)(nil)
	_ envs.Expert      = (*Env)(nil)
	_ envs.RandomActor = (*Env)(nil)
	_ envs.Solver      = (*Env)(nil)
	_ envs.StateKeyer  = (*Env)(nil)
)

// New validates cfg and returns an environment.
func New(cfg Config) (*Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Env{cfg: cfg, types: cfg.taskTypes()}
	// Every task type must have a task in the split; one scene each shows
	// it at configuration time.
	for _, tt := range e.types {
		if _, err := generate([]TaskType{tt}, e.unseen(), e.small(), envs.NewRand(0, streamScene)); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *Env) unseen() bool { return e.cfg.Split == SplitUnseen }
func (e *Env) small() bool  { return e.cfg.Scene == SceneSmall }

// Config returns the environment's configuration.
func (e *Env) Config() Config { return e.cfg }

// Task returns the current episode's task (zero before the first Reset).
func (e *Env) Task() Task {
	if e.w == nil {
		return Task{}
	}
	return e.w.task
}

// Steps returns the number of valid actions taken in this episode.
func (e *Env) Steps() int { return e.steps }

// Done reports whether the episode has ended.
func (e *Env) Done() bool { return e.done }

// Reset draws the scene and task of seed and starts an episode.
func (e *Env) Reset(seed uint64) (string, error) {
	w, err := generate(e.types, e.unseen(), e.small(), envs.NewRand(seed, streamScene))
	if err != nil {
		return "", err
	}
	e.w = w
	e.feedback = "-= Welcome to TextWorld, ALFRED! =-\n\n" + w.roomView() + "\n\nYour task is to: " + w.task.Goal
	e.steps, e.started, e.done = 0, true, false
	return e.Render(), nil
}

// Actions returns nil: actions are ALFWorld commands, free-form text
// listed per state by the observation (and RandomAction draws one).
func (e *Env) Actions() []string { return nil }

// Admissible lists the commands the current state allows, sorted, as
// ALFWorld's admissible_commands: the list the alfworld format shows.
func (e *Env) Admissible() []string {
	if !e.started {
		return nil
	}
	return e.w.admissible()
}

// Render returns the current observation in the configured format, ""
// before the first Reset.
func (e *Env) Render() string {
	if !e.started {
		return ""
	}
	if e.cfg.ObservationFormat == FormatCompact {
		return e.compact()
	}
	return e.feedback + "\n\nAdmissible actions: [" + strings.Join(e.w.admissible(), ", ") + "]"
}

// compact writes the compact observation (see FormatCompact).
func (e *Env) compact() string {
	w := e.w
	var sb strings.Builder
	sb.WriteString("Task: ")
	sb.WriteString(w.task.Goal)
	sb.WriteByte('\n')
	if w.at < 0 {
		sb.WriteString("In the middle of the room.")
	} else {
		rc := &w.recs[w.at]
		sb.WriteString("At ")
		sb.WriteString(rc.name)
		switch {
		case rc.openable && !w.open[w.at]:
			sb.WriteString(" (closed).")
		default:
			if rc.openable {
				sb.WriteString(" (open)")
			}
			sb.WriteString(": ")
			sb.WriteString(e.names(w.contents(w.at), "nothing"))
			sb.WriteByte('.')
		}
	}
	sb.WriteString("\nHolding: ")
	if w.held < 0 {
		sb.WriteString("nothing.")
	} else {
		sb.WriteString(e.objectText(w.held))
		sb.WriteByte('.')
	}
	var seen []string
	for i := range w.objs {
		o := &w.objs[i]
		if o.loc < 0 || !w.searched[o.loc] || w.visible(o.loc) || !(w.isTaskObject(i) || o.lamp && w.task.Type == LookInLight) {
			continue
		}
		seen = append(seen, e.objectText(i)+" at "+w.recs[o.loc].name)
	}
	if len(seen) > 0 {
		sb.WriteString("\nSeen: ")
		sb.WriteString(strings.Join(seen, ", "))
		sb.WriteByte('.')
	}
	var unsearched []string
	for r := range w.recs {
		if !w.searched[r] {
			unsearched = append(unsearched, w.recs[r].name)
		}
	}
	sb.WriteString("\nUnsearched: ")
	sb.WriteString(joinOr(unsearched, "none"))
	sb.WriteString(".\nActions: ")
	sb.WriteString(joinOr(w.localCommands(), "none here"))
	return sb.String()
}

// names lists objects by their compact text, or empty.
func (e *Env) names(objs []int, empty string) string {
	parts := make([]string, len(objs))
	for i, o := range objs {
		parts[i] = e.objectText(o)
	}
	return joinOr(parts, empty)
}

// objectText is an object's name with its states ("apple 1 (hot)",
// "desklamp 1 (on)").
func (e *Env) objectText(o int) string {
	ob := &e.w.objs[o]
	st := ob.states()
	if ob.on {
		st = "on"
	}
	if st == "" {
		return ob.name
	}
	return ob.name + " (" + st + ")"
}

func joinOr(parts []string, empty string) string {
	if len(parts) == 0 {
		return empty
	}
	return strings.Join(parts, ", ")
}

// Instruction explains the household, the command grammar, the
// observation and the reward, and once an episode has started, states its
// task: ALFWorld says it only in the first observation, which a window of
// recent turns (rollout.history_window) drops.
func (e *Env) Instruction() string {
	var sb strings.Builder
	sb.WriteString("You are in a household (ALFWorld). Each episode gives you a task, such as putting an object somewhere, cleaning, heating or cooling it first, putting two of them somewhere, or looking at an object under a lamp. ")
	sb.WriteString("You only see what is at your place: closed receptacles must be opened, and places you have not visited are unknown. You hold one object at a time.\n")
	sb.WriteString("Commands (one per action): go to R, open R, close R, take O from R, put O in/on R, clean O with sinkbasin N, heat O with microwave N, cool O with fridge N, use L (a lamp), examine R, look, inventory. ")
	sb.WriteString("Names are a kind and a number, e.g. apple 1, countertop 2.\n")
	if e.cfg.ObservationFormat == FormatCompact {
		sb.WriteString("Each observation gives the task, your place and what is there, what you hold, task objects seen elsewhere, the places not searched yet, and the actions possible here (besides going to any place).\n")
	} else {
		sb.WriteString("Each observation ends with the admissible actions; anything else is invalid and changes nothing.\n")
	}
	fmt.Fprintf(&sb, "Completing the task earns %s and ends the episode. You have %d actions.",
		strconv.FormatFloat(e.cfg.SuccessReward, 'g', -1, 64), e.cfg.MaxSteps)
	if e.started {
		sb.WriteString("\nYour task is to: ")
		sb.WriteString(e.w.task.Goal)
	}
	return sb.String()
}

// Step applies one command. Text that is not a command of the grammar
// (ParseCommand) or a command the state does not admit is an invalid step:
// nothing changes, the reward is 0 and it does not count against
// max_steps. Reaching the goal pays success_reward and ends the episode;
// so does running out of steps, with 0.
func (e *Env) Step(action string) (envs.StepResult, error) {
	if !e.started {
		return envs.StepResult{}, envs.ErrNotReset
	}
	if e.done {
		return envs.StepResult{}, envs.ErrEpisodeDone
	}
	c, ok := ParseCommand(action)
	if !ok {
		return envs.StepResult{Observation: e.Render()}, nil
	}
	fb, effective, ok := e.w.apply(c)
	if !ok {
		return envs.StepResult{Observation: e.Render()}, nil
	}
	e.feedback = fb
	e.steps++
	success := e.w.satisfied()
	e.done = success || e.steps >= e.cfg.MaxSteps
	reward := 0.0
	if success {
		reward = e.cfg.SuccessReward
	}
	return envs.StepResult{
		Observation: e.Render(),
		Reward:      reward,
		Done:        e.done,
		Info:        envs.Info{Success: success, ActionValid: true, ActionEffective: effective},
	}, nil
}

// RandomAction implements envs.RandomActor: a uniformly random admissible
// command, as ALFWorld's random agent plays.
func (e *Env) RandomAction(rng *rand.Rand) (string, error) {
	if !e.started {
		return "", envs.ErrNotReset
	}
	acts := e.w.admissible()
	return acts[rng.IntN(len(acts))], nil
}

// StateKey implements envs.StateKeyer: the agent's place and hand, which
// receptacles are open and searched, and every object's place and states.
func (e *Env) StateKey() string {
	if !e.started {
		return ""
	}
	return e.w.key()
}
