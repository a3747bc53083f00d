package openenv

import (
	"fmt"
)

// Splits: task listing in the style of ORS (the Open Reward Standard) and
// OpenEnv's Task API. agentrl's tasks are seeds: task i of a split is the
// level of seed SeedBase + i, so a trainer can enumerate held-out levels
// and start exactly one with reset {"split": …, "index": …}. The default
// splits are the trainer's: training levels from seed 10000 (RAGEN's
// train_seed_base), validation from 2^40 (validation.seed_base) and a test
// split from 2^41, which the trainer never uses.
//
//	GET  /splits                         → [{"name", "type"}]
//	POST /tasks          {split}          → {"tasks": [task…], "env_name"}
//	POST /num_tasks      {split}          → {"split", "num_tasks"}
//	POST /get_task       {split, index}   → task
//	POST /get_task_range {split, start?, stop?} → {"tasks": [task…], "env_name"}
//
// A task is {"id": "<split>-<index>", "split", "index", "seed"}. /tasks
// lists at most maxListedTasks; larger splits are read by range.

// Split is one named set of tasks.
type Split struct {
	// Name is the split's name; Type one of train, validation, test.
	Name string `json:"name"`
	Type string `json:"type"`
	// SeedBase is the seed of task 0; Count the number of tasks.
	SeedBase uint64 `json:"-"`
	Count    int    `json:"-"`
}

// Task is one task of a split.
type Task struct {
	ID    string `json:"id"`
	Split string `json:"split"`
	Index int    `json:"index"`
	Seed  uint64 `json:"seed"`
}

// DefaultSplits are the trainer's level sets (see the package comment).
func DefaultSplits() []Split {
	return []Split{
		{Name: "train", Type: "train", SeedBase: 10000, Count: 100_000},
		{Name: "validation", Type: "validation", SeedBase: 1 << 40, Count: 256},
		{Name: "test", Type: "test", SeedBase: 1 << 41, Count: 256},
	}
}

// maxListedTasks caps one /tasks answer.
const maxListedTasks = 10_000

type splitSet []Split

func (s splitSet) find(name string) (Split, error) {
	for _, sp := range s {
		if sp.Name == name {
			return sp, nil
		}
	}
	names := make([]string, len(s))
	for i, sp := range s {
		names[i] = sp.Name
	}
	return Split{}, fmt.Errorf("unknown split %q (have %v)", name, names)
}

func (sp Split) task(i int) Task {
	return Task{ID: fmt.Sprintf("%s-%d", sp.Name, i), Split: sp.Name, Index: i, Seed: sp.SeedBase + uint64(i)}
}

// seed is the seed of task index of the named split.
func (s splitSet) seed(name string, index int) (uint64, error) {
	sp, err := s.find(name)
	if err != nil {
		return 0, err
	}
	if index < 0 || index >= sp.Count {
		return 0, fmt.Errorf("index %d outside split %q of %d tasks", index, name, sp.Count)
	}
	return sp.SeedBase + uint64(index), nil
}

// tasks returns the tasks [start, stop) of the named split, clipped to it.
func (s splitSet) tasks(name string, start, stop int) ([]Task, error) {
	sp, err := s.find(name)
	if err != nil {
		return nil, err
	}
	start, stop = max(start, 0), min(stop, sp.Count)
	out := []Task{}
	for i := start; i < stop; i++ {
		out = append(out, sp.task(i))
	}
	return out, nil
}

func (s splitSet) validate() error {
	seen := map[string]bool{}
	for _, sp := range s {
		switch {
		case sp.Name == "" || seen[sp.Name]:
			return fmt.Errorf("openenv: split names must be unique and not empty, got %q", sp.Name)
		case sp.Type != "train" && sp.Type != "validation" && sp.Type != "test":
			return fmt.Errorf("openenv: split %q: type must be train, validation or test, got %q", sp.Name, sp.Type)
		case sp.Count < 0:
			return fmt.Errorf("openenv: split %q: negative count", sp.Name)
		}
		seen[sp.Name] = true
	}
	return nil
}
