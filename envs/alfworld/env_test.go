package alfworld

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

func newEnv(t testing.TB, mutate func(*Config)) *Env {
	t.Helper()
	cfg := DefaultConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustStep(t testing.TB, e *Env, action string) envs.StepResult {
	t.Helper()
	res, err := e.Step(action)
	if err != nil {
		t.Fatalf("Step(%q): %v", action, err)
	}
	return res
}

// openable are the receptacle kinds that open, for hand-built scenes.
var openable = map[string]bool{"cabinet": true, "drawer": true, "fridge": true, "microwave": true, "safe": true}

// scene builds a world by hand: receptacles by name, objects as "name@place"
// (lamps are kinds ending in "lamp"), and a task.
func scene(t testing.TB, task Task, recs []string, objs ...string) *world {
	t.Helper()
	w := &world{task: task, at: -1, held: -1}
	slices.Sort(recs)
	for _, name := range recs {
		kind, _, _ := strings.Cut(name, " ")
		w.recs = append(w.recs, receptacle{kind: kind, name: name, openable: openable[kind]})
	}
	w.open = make([]bool, len(w.recs))
	w.searched = make([]bool, len(w.recs))
	slices.Sort(objs)
	for _, spec := range objs {
		name, at, ok := strings.Cut(spec, "@")
		r := w.recIndex(at)
		if !ok || r < 0 {
			t.Fatalf("bad object %q", spec)
		}
		kind, _, _ := strings.Cut(name, " ")
		w.objs = append(w.objs, object{kind: kind, name: name, loc: r, lamp: strings.HasSuffix(kind, "lamp")})
	}
	if w.task.Goal == "" {
		target := w.task.Target
		w.task.Goal = strings.ReplaceAll(strings.ReplaceAll(goalTemplates[task.Type][0], "%[1]s", task.Object), "%[2]s", target)
	}
	return w
}

// envOn starts an episode on a hand-built world.
func envOn(t testing.TB, w *world, mutate func(*Config)) *Env {
	e := newEnv(t, mutate)
	e.w = w
	e.feedback = "-= Welcome to TextWorld, ALFRED! =-\n\n" + w.roomView() + "\n\nYour task is to: " + w.task.Goal
	e.steps, e.started, e.done = 0, true, false
	return e
}

var kitchen = []string{"cabinet 1", "cabinet 2", "countertop 1", "diningtable 1", "fridge 1", "microwave 1", "sinkbasin 1"}

func TestStepBeforeResetAndAfterDone(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := e.Step("look"); !errors.Is(err, envs.ErrNotReset) {
		t.Fatalf("Step before Reset: %v", err)
	}
	if _, err := e.Advise(1, nil); !errors.Is(err, envs.ErrNotReset) {
		t.Fatalf("Advise before Reset: %v", err)
	}
	if _, err := e.RandomAction(envs.NewRand(1, 1)); !errors.Is(err, envs.ErrNotReset) {
		t.Fatalf("RandomAction before Reset: %v", err)
	}
	if _, _, err := e.CostToGo(); !errors.Is(err, envs.ErrNotReset) {
		t.Fatalf("CostToGo before Reset: %v", err)
	}
	if e.Render() != "" || e.StateKey() != "" || e.Admissible() != nil {
		t.Fatal("state before Reset")
	}
	w := scene(t, Task{Type: PickAndPlace, Object: "apple", Target: "diningtable"}, kitchen, "apple 1@countertop 1")
	e = envOn(t, w, nil)
	mustStep(t, e, "go to countertop 1")
	mustStep(t, e, "take apple 1 from countertop 1")
	mustStep(t, e, "go to diningtable 1")
	res := mustStep(t, e, "put apple 1 in/on diningtable 1")
	if !res.Done || !res.Info.Success || res.Reward != 10 {
		t.Fatalf("completing the task: %+v", res)
	}
	if _, err := e.Step("look"); !errors.Is(err, envs.ErrEpisodeDone) {
		t.Fatalf("Step after done: %v", err)
	}
	if _, err := e.Advise(1, nil); !errors.Is(err, envs.ErrEpisodeDone) {
		t.Fatalf("Advise after done: %v", err)
	}
}

// TestCommands: each command's effect, ALFWorld's feedback, and the
// conditions under which it is refused (an invalid step).
func TestCommands(t *testing.T) {
	w := scene(t, Task{Type: HeatAndPlace, Object: "apple", Target: "diningtable"}, kitchen,
		"apple 1@fridge 1", "egg 1@fridge 1", "mug 1@countertop 1")
	e := envOn(t, w, nil)
	steps := []struct {
		action, feedback string // feedback "" means invalid
	}{
		{"take mug 1 from countertop 1", ""}, // not there
		{"open fridge 1", ""},
		{"look", "You are in the middle of a room. Looking quickly around you, you see a cabinet 2, a cabinet 1, a countertop 1, a diningtable 1, a fridge 1, a microwave 1, and a sinkbasin 1."},
		{"inventory", "You are not carrying anything."},
		{"go to fridge 1", "You arrive at fridge 1. The fridge 1 is closed."},
		{"go to fridge 1", ""}, // already there
		{"take apple 1 from fridge 1", ""},
		{"examine fridge 1", "The fridge 1 is closed."},
		{"close fridge 1", ""},
		{"open fridge 1", "You open the fridge 1. The fridge 1 is open. In it, you see a apple 1, and a egg 1."},
		{"open fridge 1", ""},
		{"take apple 1 from countertop 1", ""},
		{"take apple 1 from fridge 1", "You pick up the apple 1 from the fridge 1."},
		{"take egg 1 from fridge 1", ""}, // hand full
		{"heat apple 1 with microwave 1", ""},
		{"examine apple 1", "There's nothing special about apple 1."},
		{"inventory", "You are carrying: a apple 1."},
		{"go to microwave 1", "You arrive at microwave 1. The microwave 1 is closed."},
		{"heat egg 1 with microwave 1", ""},
		{"cool apple 1 with microwave 1", ""},
		{"heat apple 1 with microwave 1", "You heat the apple 1 using the microwave 1."},
		{"examine apple 1", "This is a hot apple 1."},
		{"put apple 1 in/on microwave 1", ""}, // closed
		{"look", "You are facing the microwave 1. Next to it, you see nothing."},
		{"go to countertop 1", "You arrive at countertop 1. On the countertop 1, you see a mug 1."},
		{"close countertop 1", ""},
		{"go to diningtable 1", "You arrive at diningtable 1. On the diningtable 1, you see nothing."},
		{"put egg 1 in/on diningtable 1", ""},
		{"put apple 1 on diningtable 1", "You put the apple 1 in/on the diningtable 1."},
	}
	for i, s := range steps {
		before, n := e.StateKey(), e.Steps()
		res := mustStep(t, e, s.action)
		if s.feedback == "" {
			if res.Info.ActionValid || e.StateKey() != before || e.Steps() != n || res.Reward != 0 {
				t.Fatalf("step %d %q should be invalid: %+v", i, s.action, res)
			}
			continue
		}
		if !res.Info.ActionValid || e.feedback != s.feedback {
			t.Fatalf("step %d %q: valid %v, feedback %q, want %q", i, s.action, res.Info.ActionValid, e.feedback, s.feedback)
		}
		if res.Done != (i == len(steps)-1) || res.Info.Success != res.Done {
			t.Fatalf("step %d %q: done %v success %v", i, s.action, res.Done, res.Info.Success)
		}
		wantEffective := !strings.HasPrefix(s.action, "look") && !strings.HasPrefix(s.action, "inventory") && !strings.HasPrefix(s.action, "examine")
		if res.Info.ActionEffective != wantEffective {
			t.Fatalf("step %d %q: effective %v", i, s.action, res.Info.ActionEffective)
		}
	}
}

// TestTaskCompletion: for each task type, the goal holds exactly after
// the last command of a plan, and not before.
func TestTaskCompletion(t *testing.T) {
	bedroom := []string{"bed 1", "desk 1", "drawer 1", "shelf 1"}
	cases := []struct {
		task  Task
		recs  []string
		objs  []string
		plan  []string
		extra string // a command after which the goal must still not hold
	}{
		{Task{Type: PickAndPlace, Object: "apple", Target: "fridge"}, kitchen, []string{"apple 1@countertop 1"},
			[]string{"go to countertop 1", "take apple 1 from countertop 1", "go to fridge 1", "open fridge 1", "put apple 1 in fridge 1"}, ""},
		{Task{Type: LookInLight, Object: "book", Target: "desklamp"}, bedroom, []string{"book 1@bed 1", "desklamp 1@desk 1"},
			[]string{"go to desk 1", "use desklamp 1", "go to bed 1", "take book 1 from bed 1", "go to desk 1"}, ""},
		{Task{Type: LookInLight, Object: "book", Target: "desklamp"}, bedroom, []string{"book 1@bed 1", "desklamp 1@desk 1"},
			[]string{"go to bed 1", "take book 1 from bed 1", "go to desk 1", "use desklamp 1"}, ""},
		{Task{Type: CleanAndPlace, Object: "mug", Target: "cabinet"}, kitchen, []string{"mug 1@countertop 1"},
			[]string{"go to countertop 1", "take mug 1 from countertop 1", "go to sinkbasin 1", "clean mug 1 with sinkbasin 1",
				"go to cabinet 2", "open cabinet 2", "put mug 1 in/on cabinet 2"}, "go to cabinet 1"},
		{Task{Type: HeatAndPlace, Object: "egg", Target: "countertop"}, kitchen, []string{"egg 1@fridge 1"},
			[]string{"go to fridge 1", "open fridge 1", "take egg 1 from fridge 1", "go to microwave 1", "heat egg 1 with microwave 1",
				"go to countertop 1", "put egg 1 in/on countertop 1"}, ""},
		{Task{Type: CoolAndPlace, Object: "pan", Target: "countertop"}, kitchen, []string{"pan 1@countertop 1"},
			[]string{"go to countertop 1", "take pan 1 from countertop 1", "go to fridge 1", "cool pan 1 with fridge 1",
				"go to countertop 1", "put pan 1 in/on countertop 1"}, ""},
		{Task{Type: PickTwoAndPlace, Object: "cup", Target: "cabinet"}, kitchen, []string{"cup 1@countertop 1", "cup 2@diningtable 1"},
			[]string{"go to countertop 1", "take cup 1 from countertop 1", "go to cabinet 1", "open cabinet 1", "put cup 1 in/on cabinet 1",
				"go to diningtable 1", "take cup 2 from diningtable 1", "go to cabinet 1", "put cup 2 in/on cabinet 1"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.task.Type.String(), func(t *testing.T) {
			e := envOn(t, scene(t, tc.task, tc.recs, tc.objs...), nil)
			if c, _, _ := e.CostToGo(); c > len(tc.plan) {
				t.Fatalf("cost to go %d above a %d-step plan", c, len(tc.plan))
			}
			for i, a := range tc.plan {
				res := mustStep(t, e, a)
				if !res.Info.ActionValid || res.Info.Success != (i == len(tc.plan)-1) {
					t.Fatalf("%q (step %d): %+v", a, i, res)
				}
			}
		})
	}
	// The wrong variant of each task does not complete it.
	wrong := []struct {
		task Task
		recs []string
		objs []string
		plan []string
	}{
		{Task{Type: HeatAndPlace, Object: "egg", Target: "countertop"}, kitchen, []string{"egg 1@fridge 1"},
			[]string{"go to fridge 1", "open fridge 1", "take egg 1 from fridge 1", "cool egg 1 with fridge 1", "go to countertop 1", "put egg 1 in/on countertop 1"}},
		{Task{Type: CleanAndPlace, Object: "mug", Target: "cabinet"}, kitchen, []string{"mug 1@countertop 1"},
			[]string{"go to countertop 1", "take mug 1 from countertop 1", "go to cabinet 1", "open cabinet 1", "put mug 1 in/on cabinet 1"}},
		{Task{Type: PickTwoAndPlace, Object: "cup", Target: "cabinet"}, kitchen, []string{"cup 1@countertop 1", "cup 2@diningtable 1"},
			[]string{"go to countertop 1", "take cup 1 from countertop 1", "go to cabinet 1", "open cabinet 1", "put cup 1 in/on cabinet 1",
				"go to diningtable 1", "take cup 2 from diningtable 1", "go to cabinet 2", "open cabinet 2", "put cup 2 in/on cabinet 2"}},
		{Task{Type: LookInLight, Object: "book", Target: "desklamp"}, bedroom, []string{"book 1@bed 1", "desklamp 1@desk 1"},
			[]string{"go to desk 1", "use desklamp 1", "go to bed 1", "take book 1 from bed 1", "put book 1 in/on bed 1", "go to desk 1"}},
	}
	for _, tc := range wrong {
		e := envOn(t, scene(t, tc.task, tc.recs, tc.objs...), nil)
		for _, a := range tc.plan {
			if res := mustStep(t, e, a); !res.Info.ActionValid || res.Info.Success {
				t.Fatalf("%s: %q: %+v", tc.task.Type, a, res)
			}
		}
	}
}

func TestStepLimit(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxSteps = 3 })
	e.Reset(1)
	for i := range 3 {
		if res := mustStep(t, e, "look"); res.Done != (i == 2) {
			t.Fatalf("step %d: done %v", i, res.Done)
		}
	}
}

func TestInvalidStepsChangeNothing(t *testing.T) {
	e := newEnv(t, nil)
	e.Reset(4)
	obs, key := e.Render(), e.StateKey()
	for _, a := range []string{"", "go to the fridge", "take apple 1 from fridge 1", "go to nowhere 1", "use desklamp 9", "put x 1 in y 1", "\x00", strings.Repeat("go to ", 100)} {
		res := mustStep(t, e, a)
		if res.Info.ActionValid || res.Reward != 0 || res.Done || res.Observation != obs || e.StateKey() != key || e.Steps() != 0 {
			t.Fatalf("%q changed something: %+v", a, res)
		}
	}
}

func TestDeterministic(t *testing.T) {
	for _, scene := range []string{SceneFull, SceneSmall} {
		a, b := newEnv(t, func(c *Config) { c.Scene = scene }), newEnv(t, func(c *Config) { c.Scene = scene })
		obs := map[string]bool{}
		for seed := range uint64(40) {
			x, _ := a.Reset(seed)
			y, _ := b.Reset(seed)
			if x != y || a.StateKey() != b.StateKey() {
				t.Fatalf("seed %d differs", seed)
			}
			obs[x] = true
			rng1, rng2 := envs.NewRand(seed, 1), envs.NewRand(seed, 1)
			for range 10 {
				p, _ := a.RandomAction(rng1)
				q, _ := b.RandomAction(rng2)
				r1, r2 := mustStep(t, a, p), mustStep(t, b, q)
				if p != q || r1.Observation != r2.Observation {
					t.Fatalf("seed %d: the same actions diverge", seed)
				}
			}
		}
		if len(obs) < 38 {
			t.Fatalf("%s: only %d distinct starts in 40 seeds", scene, len(obs))
		}
	}
}

// TestGenerate: over many seeds, every task type, room and split appears;
// the goal never holds at the start; what a task needs is in the scene;
// the task objects never start in the target kind; the split's
// (room, object) pairs are respected.
func TestGenerate(t *testing.T) {
	for _, split := range []string{SplitSeen, SplitUnseen} {
		for _, size := range []string{SceneFull, SceneSmall} {
			types := map[TaskType]int{}
			roomsSeen := map[string]bool{}
			cfg := DefaultConfig()
			for seed := range uint64(600) {
				w, err := generate(cfg.taskTypes(), split == SplitUnseen, size == SceneSmall, envs.NewRand(seed, streamScene))
				if err != nil {
					t.Fatal(err)
				}
				tk := w.task
				types[tk.Type]++
				roomsSeen[tk.Room] = true
				if w.satisfied() {
					t.Fatalf("seed %d: goal holds at the start", seed)
				}
				if isUnseen(tk.Room, tk.Object) != (split == SplitUnseen) {
					t.Fatalf("seed %d: %s in %s in the %s split", seed, tk.Object, tk.Room, split)
				}
				n := 0
				for i := range w.objs {
					if w.isTaskObject(i) {
						n++
						if tk.Type != LookInLight && w.recs[w.objs[i].loc].kind == tk.Target {
							t.Fatalf("seed %d: %s starts in the target", seed, w.objs[i].name)
						}
					}
				}
				if n == 0 || tk.Type == PickTwoAndPlace && n < 2 {
					t.Fatalf("seed %d: %d %s for %s", seed, n, tk.Object, tk.Type)
				}
				need := []string{appliance[tk.Type]}
				if tk.Type != LookInLight {
					need = append(need, tk.Target)
				}
				for _, k := range need {
					if k != "" && w.firstOfKind(k) < 0 {
						t.Fatalf("seed %d: no %s for %s", seed, k, tk.Goal)
					}
				}
				if tk.Type == LookInLight && !slices.ContainsFunc(w.objs, func(o object) bool { return o.lamp && o.kind == tk.Target }) {
					t.Fatalf("seed %d: no %s", seed, tk.Target)
				}
				if size == SceneSmall && len(w.recs) > 12 || size == SceneFull && tk.Room == "kitchen" && len(w.recs) < 15 {
					t.Fatalf("seed %d: %d receptacles in a %s %s", seed, len(w.recs), size, tk.Room)
				}
			}
			if len(types) != int(numTaskTypes) || len(roomsSeen) != len(rooms) {
				t.Fatalf("%s/%s: task types %v, rooms %v", split, size, types, roomsSeen)
			}
		}
	}
}

// TestPartialObservability: nothing in an unsearched receptacle shows in
// either observation format, and after searching it does.
func TestPartialObservability(t *testing.T) {
	for _, f := range []string{FormatALFWorld, FormatCompact} {
		e := newEnv(t, func(c *Config) { c.ObservationFormat = f })
		for seed := range uint64(30) {
			e.Reset(seed)
			rng := envs.NewRand(seed, 5)
			for i := 0; i < 25 && !e.Done(); i++ {
				obs := e.Render()
				w := e.w
				for o := range w.objs {
					if l := w.objs[o].loc; l >= 0 && !w.searched[l] && regexp.MustCompile(`(^|[^a-z])`+regexp.QuoteMeta(w.objs[o].name)+`(\D|$)`).MatchString(obs) {
						t.Fatalf("%s seed %d: %s in unsearched %s shows:\n%s", f, seed, w.objs[o].name, w.recs[l].name, obs)
					}
				}
				a, _ := e.RandomAction(rng)
				mustStep(t, e, a)
			}
		}
	}
}

func TestRender(t *testing.T) {
	w := scene(t, Task{Type: CoolAndPlace, Object: "apple", Target: "diningtable"}, kitchen,
		"apple 1@fridge 1", "apple 2@countertop 1", "egg 1@fridge 1")
	e := envOn(t, w, func(c *Config) { c.ObservationFormat = FormatCompact })
	want := "Task: put a cool apple in diningtable.\nIn the middle of the room.\nHolding: nothing.\n" +
		"Unsearched: cabinet 1, cabinet 2, countertop 1, diningtable 1, fridge 1, microwave 1, sinkbasin 1.\nActions: none here"
	if got := e.Render(); got != want {
		t.Fatalf("compact:\n%s\nwant:\n%s", got, want)
	}
	for _, a := range []string{"go to countertop 1", "go to fridge 1", "open fridge 1", "take apple 1 from fridge 1"} {
		mustStep(t, e, a)
	}
	want = "Task: put a cool apple in diningtable.\nAt fridge 1 (open): egg 1.\nHolding: apple 1.\nSeen: apple 2 at countertop 1.\n" +
		"Unsearched: cabinet 1, cabinet 2, diningtable 1, microwave 1, sinkbasin 1.\n" +
		"Actions: close fridge 1, cool apple 1 with fridge 1, put apple 1 in/on fridge 1"
	if got := e.Render(); got != want {
		t.Fatalf("compact:\n%s\nwant:\n%s", got, want)
	}
	e = envOn(t, w.clone(), nil)
	e.w.at, e.w.held = -1, -1
	obs := e.Render()
	if !strings.HasPrefix(obs, "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, you see a cabinet 2, a cabinet 1,") ||
		!strings.Contains(obs, "\n\nYour task is to: put a cool apple in diningtable.\n\nAdmissible actions: [go to cabinet 1, go to cabinet 2, ") ||
		!strings.HasSuffix(obs, "go to sinkbasin 1, inventory, look]") {
		t.Fatalf("alfworld:\n%s", obs)
	}
	for _, f := range []string{FormatALFWorld, FormatCompact} {
		ins := newEnv(t, func(c *Config) { c.ObservationFormat = f; c.MaxSteps = 30 }).Instruction()
		for _, s := range []string{"take O from R", "put O in/on R", "heat O with microwave N", "30 actions", "earns 10"} {
			if !strings.Contains(ins, s) {
				t.Errorf("%s instruction lacks %q", f, s)
			}
		}
	}
	if ins := e.Instruction(); !strings.HasSuffix(ins, "\nYour task is to: put a cool apple in diningtable.") {
		t.Errorf("instruction during an episode does not end with its task:\n%s", ins)
	}
}

func TestConfigValidation(t *testing.T) {
	cases := []struct{ yaml, key string }{
		{"task_types: []", "task_types"},
		{"task_types: [pick_and_place]", "task_types"},
		{"task_types: [look_at_obj_in_light, look_at_obj_in_light]", "task_types"},
		{"split: valid_unseen", "split"},
		{"scene: huge", "scene"},
		{"max_steps: 0", "max_steps"},
		{"observation_format: text", "observation_format"},
		{"success_reward: 0", "success_reward"},
		{"score: 10", "score"},
	}
	for _, tc := range cases {
		_, err := envs.NewFactoryYAML("alfworld", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%q: error %v does not name %q", tc.yaml, err, tc.key)
		}
	}
	f, err := envs.NewFactoryYAML("alfworld", []byte("task_types: [pick_heat_then_place_in_recep]\nsplit: unseen\nscene: small"))
	if err != nil {
		t.Fatal(err)
	}
	env, _ := f.New()
	for seed := range uint64(20) {
		env.Reset(seed)
		tk := env.(*Env).Task()
		if tk.Type != HeatAndPlace || (tk.Object != "tomato" && tk.Object != "mug") {
			t.Fatalf("seed %d: %+v", seed, tk)
		}
	}
}
