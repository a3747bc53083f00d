package codeexec

import (
	"fmt"
	"slices"
	"strings"
)

// Difficulty sets the size of generated inputs and the number of hidden
// tests.
type Difficulty string

// The difficulties. Easy tasks have short inputs and 6 tests, hard ones
// lists of up to 24 elements, numbers up to 1e9 and 14 tests.
const (
	Easy   Difficulty = "easy"
	Medium Difficulty = "medium"
	Hard   Difficulty = "hard"
)

// Config is the YAML configuration of the "codeexec" environment.
type Config struct {
	// MaxAttempts is the number of programs the agent may submit per
	// episode (default 3). After a submission that fails some tests the
	// next observation lists the failures.
	MaxAttempts int `yaml:"max_attempts"`
	// Families selects the task categories to draw from: any of "list",
	// "string", "arith" (default all three).
	Families []string `yaml:"families"`
	// Tasks optionally narrows the draw to named task families (see
	// FamilyNames); empty means every family of the selected categories.
	Tasks []string `yaml:"tasks"`
	// Difficulty is "easy", "medium" (default) or "hard".
	Difficulty Difficulty `yaml:"difficulty"`
	// MaxSteps is the Starlark execution-step budget of loading the program
	// and of each test call separately (default 1,000,000; roughly 10-50 ms
	// of work).
	MaxSteps uint64 `yaml:"max_steps"`
	// TimeoutSeconds bounds the wall-clock time of evaluating one
	// submission, all tests together (default 2). It backs up MaxSteps for
	// time spent inside built-in functions, which steps do not count.
	TimeoutSeconds float64 `yaml:"timeout_seconds"`
	// MaxAllocBytes is the allocation budget of loading the program and of
	// each test call (default 16 MiB): the estimated bytes of every string,
	// list, dict and big integer the guarded operations create. See
	// Sandbox for what is and is not counted.
	MaxAllocBytes int64 `yaml:"max_alloc_bytes"`
	// MaxOutputBytes caps the text captured from print per submission
	// (default 4096); the excess is dropped.
	MaxOutputBytes int `yaml:"max_output_bytes"`
	// MaxCallDepth is the deepest nesting of Starlark function calls
	// allowed (default 1000, Python's recursion limit).
	MaxCallDepth int `yaml:"max_call_depth"`
	// AllowWhile permits while loops (default true). Starlark forbids them
	// unless enabled; the step budget contains infinite loops either way.
	AllowWhile bool `yaml:"allow_while"`
	// AllowRecursion permits functions to call themselves (default true),
	// bounded by MaxCallDepth.
	AllowRecursion bool `yaml:"allow_recursion"`
	// MaxSourceBytes is the largest program accepted (default 32768);
	// longer submissions are scored as compile errors.
	MaxSourceBytes int `yaml:"max_source_bytes"`
	// FeedbackFailures is how many failed tests the feedback after a
	// submission describes (default 3).
	FeedbackFailures int `yaml:"feedback_failures"`
}

// DefaultConfig is the configuration used for keys a YAML config leaves out.
func DefaultConfig() Config {
	return Config{
		MaxAttempts:      3,
		Families:         slices.Clone(Categories),
		Difficulty:       Medium,
		MaxSteps:         1_000_000,
		TimeoutSeconds:   2,
		MaxAllocBytes:    16 << 20,
		MaxOutputBytes:   4096,
		MaxCallDepth:     1000,
		AllowWhile:       true,
		AllowRecursion:   true,
		MaxSourceBytes:   32 << 10,
		FeedbackFailures: 3,
	}
}

// Validate checks every key and names the offending one with its allowed
// values.
func (c *Config) Validate() error {
	if c.MaxAttempts < 1 || c.MaxAttempts > 100 {
		return fmt.Errorf("max_attempts: must be an integer in [1, 100], got %d", c.MaxAttempts)
	}
	if len(c.Families) == 0 {
		return fmt.Errorf("families: must list at least one of %s", strings.Join(Categories, ", "))
	}
	for _, f := range c.Families {
		if !slices.Contains(Categories, f) {
			return fmt.Errorf("families: unknown category %q (allowed: %s)", f, strings.Join(Categories, ", "))
		}
	}
	for _, t := range c.Tasks {
		f, ok := findFamily(t)
		if !ok {
			return fmt.Errorf("tasks: unknown task family %q (allowed: %s)", t, strings.Join(FamilyNames(), ", "))
		}
		if !slices.Contains(c.Families, f.category) {
			return fmt.Errorf("tasks: task family %q is in category %q, which families does not enable", t, f.category)
		}
	}
	if _, ok := levels[c.Difficulty]; !ok {
		return fmt.Errorf("difficulty: must be %q, %q or %q, got %q", Easy, Medium, Hard, c.Difficulty)
	}
	if c.MaxSteps < 1_000 || c.MaxSteps > 1_000_000_000 {
		return fmt.Errorf("max_steps: must be in [1000, 1e9], got %d", c.MaxSteps)
	}
	if !(c.TimeoutSeconds > 0 && c.TimeoutSeconds <= 600) {
		return fmt.Errorf("timeout_seconds: must be in (0, 600], got %v", c.TimeoutSeconds)
	}
	if c.MaxAllocBytes < 1<<16 || c.MaxAllocBytes > 1<<32 {
		return fmt.Errorf("max_alloc_bytes: must be in [65536, 4294967296], got %d", c.MaxAllocBytes)
	}
	if c.MaxOutputBytes < 0 || c.MaxOutputBytes > 1<<20 {
		return fmt.Errorf("max_output_bytes: must be in [0, 1048576], got %d", c.MaxOutputBytes)
	}
	if c.MaxCallDepth < 1 || c.MaxCallDepth > 10_000 {
		return fmt.Errorf("max_call_depth: must be in [1, 10000], got %d", c.MaxCallDepth)
	}
	if c.MaxSourceBytes < 256 || c.MaxSourceBytes > 1<<20 {
		return fmt.Errorf("max_source_bytes: must be in [256, 1048576], got %d", c.MaxSourceBytes)
	}
	if c.FeedbackFailures < 1 || c.FeedbackFailures > 100 {
		return fmt.Errorf("feedback_failures: must be in [1, 100], got %d", c.FeedbackFailures)
	}
	return nil
}

// families returns the catalogue entries the config enables, in catalogue
// order.
func (c *Config) families() []family {
	var out []family
	for _, f := range catalogue {
		if slices.Contains(c.Families, f.category) && (len(c.Tasks) == 0 || slices.Contains(c.Tasks, f.name)) {
			out = append(out, f)
		}
	}
	return out
}
