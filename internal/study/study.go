// Package study runs the experiment scripts under scripts/: every arm ×
// seed of a study is an ordinary trainer run (its command printed before it
// starts), and the finished runs are summarised with internal/report into a
// section of a markdown results file, between markers the script owns.
//
// Runs of one seed share a warm-start cache, so every arm of a seed starts
// from the same model. A finished run is not trained again (its directory
// resumes and ends at once), so an interrupted study continues where it
// stopped; -fresh starts over and -report trains nothing.
package study

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentrl/agentrl/internal/report"
)

// Arm is one setting of a study: a preset and settings on top of it.
type Arm struct {
	Label  string
	Preset string
	Sets   []string
	// Configs, when set, limits the arm to these of the study's configs
	// (a comparison that one environment answers). The arm's string form
	// carries it as the setting configs=PATH;PATH (trainer settings are
	// dotted keys, so it cannot clash with one).
	Configs []string
}

// runsOn reports whether the arm runs on config.
func (a Arm) runsOn(config string) bool {
	return len(a.Configs) == 0 || slices.Contains(a.Configs, config)
}

// armsFor are the study's arms that run on config.
func (s *Study) armsFor(config string) []Arm {
	var out []Arm
	for _, a := range s.Arms {
		if a.runsOn(config) {
			out = append(out, a)
		}
	}
	return out
}

// armConfigsKey is the setting of an arm's string form that limits it to
// some configs (Arm.Configs).
const armConfigsKey = "configs"

// ParseArm reads "PRESET" or "LABEL=PRESET+KEY=VALUE+…", where the setting
// configs=PATH;PATH limits the arm to those configs.
func ParseArm(spec string) (Arm, error) {
	label, rest, ok := strings.Cut(spec, "=")
	if !ok {
		return Arm{Label: spec, Preset: spec}, nil
	}
	parts := strings.Split(rest, "+")
	for _, s := range parts[1:] {
		if !strings.Contains(s, "=") {
			return Arm{}, fmt.Errorf("arm %q: setting %q is not KEY=VALUE", spec, s)
		}
	}
	if label == "" || parts[0] == "" || strings.ContainsAny(label, `/\ `) {
		return Arm{}, fmt.Errorf("arm %q: want PRESET or LABEL=PRESET+KEY=VALUE+…", spec)
	}
	a := Arm{Label: label, Preset: parts[0]}
	for _, kv := range parts[1:] {
		if v, ok := strings.CutPrefix(kv, armConfigsKey+"="); ok {
			a.Configs = append(a.Configs, strings.Split(v, ";")...)
			continue
		}
		a.Sets = append(a.Sets, kv)
	}
	return a, nil
}

// String is the arm as ParseArm reads it.
func (a Arm) String() string {
	if a.Label == a.Preset && len(a.Sets) == 0 && len(a.Configs) == 0 {
		return a.Preset
	}
	parts := append([]string{a.Preset}, a.Sets...)
	if len(a.Configs) > 0 {
		parts = append(parts, armConfigsKey+"="+strings.Join(a.Configs, ";"))
	}
	return a.Label + "=" + strings.Join(parts, "+")
}

// Study is one experiment.
type Study struct {
	// Name keys the results section ("credit") and Command is how the
	// script is run ("go run ./scripts/credit").
	Name, Command string
	// Configs are the trainer configs every arm runs on.
	Configs []string
	Arms    []Arm
	Seeds   int
	// Out is the parent directory of the runs; Sets are settings for every
	// run; Threshold is the steps-to-threshold level of validation success.
	Out       string
	Sets      []string
	Threshold float64
	// Results is the markdown file whose sections are rewritten (with a
	// plot per config beside it); empty: print only.
	Results string
	// Fresh deletes earlier runs first; ReportOnly trains nothing.
	Fresh, ReportOnly bool
	// Quick is recorded in the header when the run used the script's
	// -quick settings.
	Quick bool
	// Note, if set, is printed under each section's header.
	Note string
	// Extra, if set, adds a study's own tables to each section.
	Extra func(arms []report.Arm) string
}

// metric is the curve a study compares.
const metric = "val-env/success"

// SetFlags is a repeatable -set KEY=VALUE flag (flag.Value).
type SetFlags []string

func (s *SetFlags) String() string     { return strings.Join(*s, " ") }
func (s *SetFlags) Set(v string) error { *s = append(*s, v); return nil }

// QuickSets are the -quick settings: 30 RL steps after a warm start of a
// third of the shipped length, so that the whole suite's quick version
// (scripts/ragen2 -quick) fits 15 minutes on 2 cores. Its numbers check
// that every arm runs and point the way; they are not results.
var QuickSets = []string{"run.steps=30", "warm_start.steps=2000"}

// Quick makes s the -quick version every script uses: one seed of
// QuickSets, in its own directory and results sections.
func Quick(s *Study) {
	s.Quick, s.Seeds, s.Out = true, 1, s.Out+"-quick"
	s.Sets = append(s.Sets, QuickSets...)
}

// NoFilter and SNRFilter are the filter settings the studies compare: every
// group, and the shipped SNR-aware top-p 0.9 (linear, zero-spread groups
// dropped).
var (
	NoFilter  = []string{"filter.strategy=top_p", "filter.value=1", "filter.include_zero=true"}
	SNRFilter = []string{"filter.strategy=top_p", "filter.value=0.9", "filter.top_p_prob_mode=linear", "filter.include_zero=false"}
)

// RAGENWeighting weighs the loss as RAGEN does in effect (micro-batches of
// one sequence: every sequence equally), for arms that reproduce the paper
// with a token-mean loss (PPO).
const RAGENWeighting = "algo.micro_batch_weighting=true"

// Main parses the command line over the study's defaults and runs it
// (-quick applies Quick). It exits the process on error.
func Main(def Study) {
	s := def
	var sets SetFlags
	var arms, configs string
	var quickFlag bool
	flag.StringVar(&arms, "arms", joinArms(def.Arms), "comma-separated arms: PRESET or LABEL=PRESET+KEY=VALUE+…")
	flag.StringVar(&configs, "configs", strings.Join(def.Configs, ","), "comma-separated trainer configs")
	flag.IntVar(&s.Seeds, "seeds", def.Seeds, "seeds per arm (run.seed = 1..N)")
	flag.StringVar(&s.Out, "out", def.Out, "parent directory of the runs")
	flag.Float64Var(&s.Threshold, "threshold", def.Threshold, "validation success for the steps-to-threshold column")
	flag.Var(&sets, "set", "KEY=VALUE passed to every run (repeatable)")
	flag.StringVar(&s.Results, "results", "", "markdown file whose sections for this study are replaced (plots go beside it)")
	flag.BoolVar(&s.Fresh, "fresh", false, "delete earlier runs and the warm-start cache first")
	flag.BoolVar(&s.ReportOnly, "report", false, "train nothing: report the finished runs in -out")
	flag.BoolVar(&quickFlag, "quick", false, "the short version (fewer seeds and steps; its own -out)")
	flag.Parse()
	var err error
	if s.Arms, err = parseArms(arms); err != nil {
		fail(def.Name, err)
	}
	s.Configs = strings.Split(configs, ",")
	s.Sets = append(s.Sets, sets...)
	if quickFlag {
		Quick(&s)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := s.Run(ctx); err != nil {
		fail(def.Name, err)
	}
}

func fail(name string, err error) {
	slog.Error(name, "err", err)
	os.Exit(1)
}

func parseArms(s string) ([]Arm, error) {
	var out []Arm
	for _, spec := range strings.Split(s, ",") {
		a, err := ParseArm(spec)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func joinArms(arms []Arm) string {
	s := make([]string, len(arms))
	for i, a := range arms {
		s[i] = a.String()
	}
	return strings.Join(s, ",")
}

// configName is a config file's base name without extension.
func configName(path string) string {
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}

// runDir is where one run lives: Out/<arm>-seed<N>, under a directory
// per config when the study has several.
func (s *Study) runDir(config string, a Arm, seed int) string {
	dir := s.Out
	if len(s.Configs) > 1 {
		dir = filepath.Join(dir, configName(config))
	}
	return filepath.Join(dir, fmt.Sprintf("%s-seed%d", a.Label, seed))
}

// Run trains what is not finished, then reports every config.
func (s *Study) Run(ctx context.Context) error {
	switch {
	case s.Seeds < 1:
		return fmt.Errorf("-seeds: must be at least 1, got %d", s.Seeds)
	case s.Fresh && s.ReportOnly:
		return errors.New("-fresh and -report are exclusive")
	case len(s.Arms) == 0 || len(s.Configs) == 0:
		return errors.New("no arms or no configs")
	}
	if s.Fresh {
		if err := os.RemoveAll(s.Out); err != nil {
			return err
		}
	}
	bin := filepath.Join(s.Out, "trainer")
	if !s.ReportOnly {
		if err := os.MkdirAll(s.Out, 0o755); err != nil {
			return err
		}
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./trainer")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build ./trainer: %w", err)
		}
	}
	for _, config := range s.Configs {
		var arms []report.Arm
		for _, a := range s.armsFor(config) {
			ra := report.Arm{Label: a.Label}
			for seed := 1; seed <= s.Seeds; seed++ {
				dir := s.runDir(config, a, seed)
				args := []string{"-config", config, "-out", dir, "-set", "algo.preset=" + a.Preset,
					"-set", fmt.Sprintf("run.seed=%d", seed), "-set", "warm_start.cache_dir=" + filepath.Join(s.Out, "cache")}
				for _, kv := range append(slices.Clone(s.Sets), a.Sets...) {
					args = append(args, "-set", kv)
				}
				if !s.ReportOnly {
					fmt.Fprintf(os.Stderr, "\n$ go run ./trainer %s\n", strings.Join(args, " "))
					cmd := exec.CommandContext(ctx, bin, args...)
					var logs bytes.Buffer
					cmd.Stdout, cmd.Stderr = os.Stderr, &logs
					if err := cmd.Run(); err != nil {
						// A stopping rule ending the run early is an outcome
						// of the experiment, not a failure of the study.
						r, lerr := report.Load(dir)
						if lerr != nil || !strings.HasPrefix(r.Summary.Status, "stopped early") {
							os.Stderr.Write(logs.Bytes())
							return fmt.Errorf("%s, %s seed %d: %w", config, a.Label, seed, err)
						}
						fmt.Fprintf(os.Stderr, "%s, %s seed %d: the run %s\n", config, a.Label, seed, r.Summary.Status)
					}
				}
				r, err := report.Load(dir)
				if err != nil {
					return fmt.Errorf("%s, %s seed %d: %w", config, a.Label, seed, err)
				}
				ra.Runs = append(ra.Runs, r)
			}
			arms = append(arms, ra)
		}
		if err := s.write(config, arms); err != nil {
			return err
		}
	}
	return nil
}

// WallTime is the summed wall time of the study's finished runs (warm
// starts included), and their number.
func (s *Study) WallTime() (time.Duration, int, error) {
	total, n := 0.0, 0
	for _, config := range s.Configs {
		for _, a := range s.armsFor(config) {
			for seed := 1; seed <= s.Seeds; seed++ {
				r, err := report.Load(s.runDir(config, a, seed))
				if err != nil {
					return 0, 0, err
				}
				total += r.Summary.WallTime
				n++
			}
		}
	}
	return time.Duration(total * float64(time.Second)).Round(time.Second), n, nil
}

// sectionName is the study's name in the results file: a quick version
// gets sections of its own, so it never overwrites the full results.
func (s *Study) sectionName() string {
	if s.Quick {
		return s.Name + "-quick"
	}
	return s.Name
}

// markerCommand is the command a section's markers name.
func (s *Study) markerCommand() string {
	if s.Quick {
		return s.Command + " -quick"
	}
	return s.Command
}

// key names a config's section: the study's name, and the config's when
// the study has several.
func (s *Study) key(config string) string {
	if len(s.Configs) > 1 {
		return s.sectionName() + ":" + configName(config)
	}
	return s.sectionName()
}

// BeginMarker and EndMarker delimit a section of the results file.
func BeginMarker(key, command string) string {
	return fmt.Sprintf("<!-- %s:begin (%s -results docs/results.md) -->", key, command)
}

// EndMarker ends the section key.
func EndMarker(key string) string { return fmt.Sprintf("<!-- %s:end -->", key) }

// commandLine is the command that reproduces the study (every config's
// runs, arms limited to some configs included), for each section's header.
func (s *Study) commandLine() string {
	parts := []string{s.Command}
	if s.Quick {
		parts = append(parts, "-quick")
	}
	parts = append(parts, "-arms '"+joinArms(s.Arms)+"'", "-configs "+strings.Join(s.Configs, ","), fmt.Sprintf("-seeds %d", s.Seeds))
	for _, kv := range s.Sets {
		parts = append(parts, "-set "+kv)
	}
	if s.Results != "" {
		parts = append(parts, "-results "+s.Results)
	}
	return strings.Join(parts, " ")
}

func (s *Study) write(config string, arms []report.Arm) error {
	key := s.key(config)
	var plotFile string
	if s.Results != "" {
		plotFile = filepath.Join(filepath.Dir(s.Results), "results", s.sectionName()+"-"+configName(config)+".png")
		if err := os.MkdirAll(filepath.Dir(plotFile), 0o755); err != nil {
			return err
		}
		if err := report.Plot(arms, metric, "Validation success ("+config+"), mean and 95% band over seeds", plotFile); err != nil {
			return err
		}
	}
	text := s.Section(config, arms, plotFile)
	fmt.Println(text)
	if s.Results != "" {
		return ReplaceSection(s.Results, key, s.markerCommand(), text)
	}
	return nil
}

// Section is the markdown of one config's results.
func (s *Study) Section(config string, arms []report.Arm, plotFile string) string {
	var b strings.Builder
	key := s.key(config)
	total := 0.0
	for _, a := range arms {
		for _, r := range a.Runs {
			total += r.Summary.WallTime
		}
	}
	fmt.Fprintf(&b, "%s\n", BeginMarker(key, s.markerCommand()))
	fmt.Fprintf(&b, "`%s`: %d seed(s) per arm on `%s`; these runs took %s in all on 2 cores (warm starts included, each built once per seed).\n\n",
		s.commandLine(), s.Seeds, config, (time.Duration(total) * time.Second).Round(time.Second))
	if s.Note != "" {
		b.WriteString(s.Note + "\n\n")
	}
	fmt.Fprintf(&b, "Validation success on %d episodes per point; ± is the 95%% interval over seeds (Student's t). "+
		"Start: the warm start (step 0). Curve mean: the mean of every validation point after it (a sample-efficiency measure). "+
		"Steps to threshold: the first validation step at or above %.2f, per seed (— never).\n\n", arms[0].Runs[0].Summary.Episodes(), s.Threshold)
	b.WriteString(report.Table(arms, metric, s.Threshold))
	b.WriteString("\nValidation curve (mean ± 95% interval over seeds):\n\n")
	b.WriteString(report.CurveTable(arms, metric, 10))
	if g := report.GradientTable(arms); g != "" {
		b.WriteString("\nGradient analysis: the actor gradient's terms by reward-std bucket of the batch before filtering (q1 lowest), means over measurements and seeds:\n\n")
		b.WriteString(g)
	}
	if d := report.DiagnosticsTable(arms); d != "" {
		b.WriteString("\nCollapse diagnostics, the mean of each reading's last quarter over seeds (first-turn scheme), and the collapse alarm's regimes:\n\n")
		b.WriteString(d)
	}
	if s.Extra != nil {
		if e := s.Extra(arms); e != "" {
			b.WriteString("\n" + e)
		}
	}
	if plotFile != "" {
		rel, err := filepath.Rel(filepath.Dir(s.Results), plotFile)
		if err != nil {
			rel = plotFile
		}
		fmt.Fprintf(&b, "\n![validation success per arm, mean and 95%% band over seeds](%s)\n", filepath.ToSlash(rel))
	}
	b.WriteString(EndMarker(key))
	return b.String()
}

// SmokeSets shrink every run to seconds (a tiny model, a short warm start,
// one step, a few validation levels): what the scripts' smoke tests run in
// CI so that they cannot rot.
var SmokeSets = []string{
	"model.d_model=32", "model.layers=1", "model.heads=2", "model.kv_heads=2", "model.d_ff=64", "model.vocab_size=300",
	"warm_start.episodes=40", "warm_start.steps=30", "warm_start.batch=8",
	"run.steps=1", "run.groups=2", "run.group_size=4", "algo.ppo_mini_batch_size=4",
	"validation.levels=4", "validation.every=1", "collapse.samples=8", "checkpoint.every=0",
}

// ReplaceSection writes text over the section key of file (from its begin
// marker to its end marker), or appends it when the file has none.
func ReplaceSection(file, key, command, text string) error {
	raw, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	s := string(raw)
	begin, end := BeginMarker(key, command), EndMarker(key)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	switch {
	case i >= 0 && j > i:
		s = s[:i] + text + s[j+len(end):]
	case i >= 0 || j >= 0:
		return fmt.Errorf("%s: unbalanced %s markers", file, key)
	default:
		if s != "" && !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		s += "\n" + text + "\n"
	}
	return os.WriteFile(file, []byte(s), 0o644)
}
