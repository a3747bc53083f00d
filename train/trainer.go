// Package train is agentrl's training loop, importable so that programs
// can train on their own environments and with their own learners:
//
//	cfg, err := train.Load("configs/sokoban.yaml", nil)
//	t, err := train.New(cfg, train.Options{})
//	err = t.Run(ctx)
//
// One step (step.go): collect N env groups × K samples with the rollout
// engine → template-collapse metrics on the unfiltered batch (every
// collapse.every steps) → SNR-aware filter on the per-group reward spread
// → advantages (algos preset) → Learner.Update (log-probs recomputed under
// the current weights) → Sampler.Publish → validation, metrics,
// checkpoint. The step works on a copy of the run's State and commits it
// once, with its metrics, when it completes.
//
// What trains is a Learner, built by the factory registered under the
// configuration's learner name: train/inprocess registers "native" (the
// embedded Go transformer with its warm start, or a Hugging Face model,
// trained in this process) and train/tinkerlearner "tinker" (the learner
// on a Tinker API server). Where rollouts sample is a Sampler: the
// learner's own policy, or with server.url train/served's, a server that
// loads the learner's LoRA adapters after every step. Programs import the
// packages they use (trainer imports all three), or pass their own
// factory in Options.Learner.
//
// A run directory belongs to one run: its identity (the environment, every
// setting that changes what the run computes, the model) is checked before
// anything is written, and a resumed run cuts its files back to the
// checkpoint it continues from. Everything random derives from run.seed,
// the step and a named stream (seeds.go), and no budget depends on wall
// time, so a resumed run continues the same curve as an uninterrupted one,
// on any machine.
package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/internal/atomicdir"
	"github.com/agentrl/agentrl/internal/runlock"
	"github.com/agentrl/agentrl/internal/yamlpath"
	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/rollout"
)

// Options are the trainer's I/O and the learner of programs that bring
// their own.
type Options struct {
	// Logger receives progress and warnings (default: text to stderr).
	Logger *slog.Logger
	// Console receives one progress line per step and the final summary
	// (default: stdout).
	Console io.Writer
	// ConfigPath is the file the configuration came from, quoted in the
	// commands the final summary suggests (default configs/<env>.yaml).
	ConfigPath string
	// Learner, when set, builds the run's learner instead of the factory
	// registered under the configuration's learner name.
	Learner LearnerFactory
}

// Trainer runs one training configuration.
type Trainer struct {
	cfg         Config
	log         *slog.Logger
	console     io.Writer
	configPath  string
	learnerReg  LearnerRegistration
	samplerReg  *SamplerRegistration // nil: the learner's own policy
	factory     *envs.Factory
	valFactory  *envs.Factory    // the validation environment (env.config with validation.env_config over it)
	demoFactory *envs.Factory    // the warm start's demonstrations (env.config with warm_start.env_config over it)
	now         func() time.Time // the clock; only logs and timings read it

	// valKeys are the layouts (initial observations) of the validation
	// levels; no warm-start or training level may share one.
	valSeeds []uint64
	valKeys  map[string]bool
}

// New checks the configuration, resolves the environment, the learner and
// the sampler, and runs their checks (which may read the file system).
// It writes nothing.
func New(cfg Config, opts Options) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	factory, err := envs.NewFactory(cfg.Env.Name, &cfg.Env.Config)
	if err != nil {
		return nil, err
	}
	if cfg.Algo.UsesCostToGo() {
		env, err := factory.New()
		if err != nil {
			return nil, err
		}
		if _, ok := env.(envs.Solver); !ok {
			return nil, fmt.Errorf("algo.credit: solver needs an environment with an exact solver (envs.Solver); %q has none", cfg.Env.Name)
		}
	}
	valNode, err := yamlpath.Merge(&cfg.Env.Config, &cfg.Validation.EnvConfig)
	if err != nil {
		return nil, fmt.Errorf("validation.env_config: %w", err)
	}
	valFactory, err := envs.NewFactory(cfg.Env.Name, valNode)
	if err != nil {
		return nil, fmt.Errorf("validation.env_config: %w", err)
	}
	demoNode, err := yamlpath.Merge(&cfg.Env.Config, &cfg.WarmStart.EnvConfig)
	if err != nil {
		return nil, fmt.Errorf("warm_start.env_config: %w", err)
	}
	demoFactory, err := envs.NewFactory(cfg.Env.Name, demoNode)
	if err != nil {
		return nil, fmt.Errorf("warm_start.env_config: %w", err)
	}
	t := &Trainer{cfg: cfg, log: opts.Logger, console: opts.Console, configPath: opts.ConfigPath, factory: factory,
		valFactory: valFactory, demoFactory: demoFactory, now: time.Now}
	if opts.Learner != nil {
		t.learnerReg = LearnerRegistration{Description: "Options.Learner", New: opts.Learner}
	} else if t.learnerReg, err = lookupLearner(cfg.LearnerName()); err != nil {
		return nil, err
	}
	if t.learnerReg.Check != nil {
		if err := t.learnerReg.Check(cfg); err != nil {
			return nil, err
		}
	}
	if name := cfg.SamplerName(); name != "" {
		r, err := lookupSampler(name)
		if err != nil {
			return nil, err
		}
		if r.Check != nil {
			if err := r.Check(cfg); err != nil {
				return nil, err
			}
		}
		t.samplerReg = &r
	}
	if t.log == nil {
		t.log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if t.console == nil {
		t.console = os.Stdout
	}
	if t.configPath == "" {
		t.configPath = filepath.Join("configs", cfg.Env.Name+".yaml")
	}
	return t, nil
}

// session is a run in progress.
type session struct {
	*Trainer
	learner  Learner
	sampler  Sampler
	identity runIdentity
	engine   *rollout.Engine
	valEng   *rollout.Engine
	rec      *recorder
	lock     *runlock.Lock
	// state is what the last completed step left (or the checkpoint
	// resumed); a step works on a copy (step.go).
	state State
	// ahead samples the next steps while one learns (rollout.staleness
	// ≥ 1); nil samples each step in line. pending are the steps a resumed
	// checkpoint had sampled ahead.
	ahead   *ahead
	pending []collected
	sched   native.Schedule
	// warmStartTime is the time the run spent building the warm start
	// (0 when it came from the cache), in this session or, resumed, the
	// first one.
	warmStartTime time.Duration
	// started is when this session began; priorElapsed the wall time of
	// the sessions before it (see State.ElapsedS).
	started      time.Time
	priorElapsed time.Duration
}

// ErrStopped is returned by Run when a stopping rule ended the run early
// (empty batches, collapsed reward variance, repeated non-finite losses).
var ErrStopped = errors.New("training stopped early")

// Run trains until run.steps, a stopping rule, or ctx ends. An interrupt
// takes effect between steps: the run saves a checkpoint of the last
// completed step and returns ctx.Err(). A step that fails because the
// learner's server lost its state (Recoverer) resumes the run from its
// last checkpoint, in this process, up to maxResumes times. The run ends
// with a summary on the console and in run.out/summary.json.
func (t *Trainer) Run(ctx context.Context) error {
	for resumes := 0; ; resumes++ {
		resume, err := t.runSession(ctx, resumes < maxResumes)
		if !resume {
			return err
		}
		t.log.Warn("the learner's server lost the run's state: resuming from the last checkpoint", "error", err, "resume", resumes+1, "of", maxResumes)
	}
}

// maxResumes bounds the resumes of one Run after a server lost the
// learner's state.
const maxResumes = 3

// runSession opens the run (resuming from the run directory's checkpoint
// if there is one) and trains; resume reports that it failed for a server
// that lost the learner's state and may be resumed again (when allowed).
func (t *Trainer) runSession(ctx context.Context, mayResume bool) (resume bool, err error) {
	start := t.now()
	s, err := t.open(ctx)
	if err != nil {
		return false, err
	}
	s.started = start
	defer s.close()
	err = s.loop(ctx)
	if ctx.Err() != nil {
		if learnerChanged(err) {
			// A step that failed after its update began left weights
			// that are no step's: the last checkpoint stays.
			t.log.Warn("interrupted inside a failed step: not saved; the same command resumes from the last checkpoint", "error", err)
			return false, errors.Join(ctx.Err(), err)
		}
		if serr := s.checkpoint(context.WithoutCancel(ctx)); serr != nil {
			return false, errors.Join(ctx.Err(), serr)
		}
		t.log.Info("interrupted: checkpoint saved; run the same command again to resume", "step", s.state.Step, "dir", t.cfg.Run.Out)
		s.summarize(s.elapsed(), "interrupted")
		return false, ctx.Err()
	}
	if err != nil && !errors.Is(err, ErrStopped) {
		if r, ok := s.learner.(Recoverer); ok && mayResume {
			if lost, rerr := r.Recover(ctx); lost {
				return true, err
			} else if rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		return false, err
	}
	if serr := s.checkpoint(ctx); serr != nil {
		return false, serr
	}
	reason := "finished"
	if err != nil {
		reason = "stopped early: " + s.state.Stopped
	}
	s.summarize(s.elapsed(), reason)
	return false, err
}

// open prepares a session: the run's identity is checked against the run
// directory (reading only), the directory is locked, the starting point is
// found (a checkpoint to resume, or none), the learner is built from it
// (a new run's warm start included), and the sampler and the rollout
// engines around them; only then are the run's files written.
func (t *Trainer) open(ctx context.Context) (*session, error) {
	id, err := t.checkIdentity()
	if err != nil {
		return nil, err
	}
	lock, err := runlock.Acquire(t.cfg.Run.Out)
	if err != nil {
		return nil, fmt.Errorf("%w; wait for it to finish or use -out DIR", err)
	}
	s := &session{Trainer: t, lock: lock, identity: id,
		sched: native.Schedule{Peak: t.cfg.Algo.LR, Min: t.cfg.Algo.LR, Warmup: t.cfg.Algo.WarmupSteps}}
	// Checked again under the lock: another process may have started here
	// between the first check and the lock.
	resumeFrom, err := t.checkRunDir(id)
	if err == nil {
		err = s.startingPoint(resumeFrom)
	}
	if err == nil {
		err = s.openLearner(ctx, resumeFrom)
	}
	if err == nil {
		err = s.openEngines(ctx, resumeFrom)
	}
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// checkIdentity computes the run's identity and checks it against what
// the run directory holds, finishing a checkpoint replacement a crash
// interrupted first. It writes nothing else.
func (t *Trainer) checkIdentity() (runIdentity, error) {
	id, err := t.identity()
	if err != nil {
		return runIdentity{}, err
	}
	if err := atomicdir.Recover(filepath.Join(t.cfg.Run.Out, checkpointsDir, latestCheckpoint)); err != nil {
		return runIdentity{}, err
	}
	_, err = t.checkRunDir(id)
	return id, err
}

// startingPoint builds the validation set and, resuming, reads the
// checkpoint's trainer state.
func (s *session) startingPoint(resumeFrom string) error {
	if err := s.buildValidationSet(); err != nil {
		return err
	}
	if resumeFrom == "" {
		return nil
	}
	var err error
	if s.state, err = s.loadState(resumeFrom); err != nil {
		return fmt.Errorf("resume from %s: %w", resumeFrom, err)
	}
	if s.pending, err = loadPending(resumeFrom, s.state.Step); err != nil {
		return fmt.Errorf("resume from %s: %w", resumeFrom, err)
	}
	if len(s.pending) > 0 && s.cfg.Rollout.Staleness == 0 {
		return fmt.Errorf("resume from %s: the checkpoint holds rollouts sampled ahead (rollout.staleness ≥ 1), which this run cannot take", resumeFrom)
	}
	if s.state.ElapsedS == 0 && s.state.Step > 0 {
		s.legacyElapsed(&s.state)
	}
	s.priorElapsed = time.Duration(s.state.ElapsedS * float64(time.Second))
	s.warmStartTime = time.Duration(s.state.WarmStartS * float64(time.Second))
	return nil
}

// openLearner builds the learner: restored from resumeFrom, or from the
// starting weights for a new run, whose state starts afresh and whose
// directory loses what an earlier run left there.
func (s *session) openLearner(ctx context.Context, resumeFrom string) error {
	start := s.start(resumeFrom)
	l, err := s.learnerReg.New(ctx, start)
	if err != nil {
		if resumeFrom != "" {
			return fmt.Errorf("resume from %s: %w", resumeFrom, err)
		}
		return err
	}
	s.learner = l
	if resumeFrom != "" {
		s.checkArithmetic(l, s.state.Arithmetic)
		s.log.Info("resuming", "dir", resumeFrom, "step", s.state.Step)
		return nil
	}
	s.warmStartTime = start.warmStart
	s.state = s.newState()
	s.state.WarmStartS = s.warmStartTime.Seconds()
	return s.clearRunDir()
}

// openEngines builds the sampler, with the learner's current weights (the
// starting ones, or a resumed checkpoint's) as version state.Step, writes
// the run's identity and configuration, opens its files (cut back to the
// resumed step) and builds the rollout engines.
func (s *session) openEngines(ctx context.Context, resumeFrom string) error {
	c := s.cfg
	var err error
	switch {
	case s.samplerReg != nil:
		if s.sampler, err = s.samplerReg.New(ctx, s.start(resumeFrom), s.learner, s.state.Step); err != nil {
			return err
		}
	case c.Rollout.Staleness > 0:
		if s.sampler, err = newSnapshotSampler(ctx, s.learner, s.state.Step); err != nil {
			return err
		}
	default:
		s.sampler = ownSampler{s.learner}
	}
	model := s.learner.Model()
	s.identity.Model = &model
	if err := s.writeRunFiles(s.identity); err != nil {
		return err
	}
	keep := -1
	if resumeFrom != "" {
		keep = s.state.Step
	}
	if s.rec, err = newRecorder(c.Run.Out, keep, s.log); err != nil {
		return err
	}
	pol := s.sampler.Policy()
	trainCfg := c.Rollout
	trainCfg.CostToGo, trainCfg.TurnStates = c.Algo.UsesCostToGo(), c.Algo.UsesTurnStates()
	if s.engine, err = rollout.New(ctx, trainCfg, pol, s.factory); err != nil {
		return err
	}
	valCfg := c.Rollout
	valCfg.Sampling.Temperature = c.Validation.Temperature
	if s.valEng, err = rollout.New(ctx, valCfg, pol, s.valFactory); err != nil {
		return err
	}
	if c.Rollout.Staleness > 0 {
		vs, ok := s.sampler.(VersionedSampler)
		if !ok {
			return fmt.Errorf("rollout.staleness %d: %s cannot keep earlier versions of the weights sampleable (train.VersionedSampler); set rollout.staleness to 0",
				c.Rollout.Staleness, s.sampler.Describe())
		}
		s.ahead = startAhead(s, vs, s.pending)
		s.pending = nil
	}
	s.log.Info("model", "kind", model.Kind, "params", model.Params, "max_context", pol.Info().MaxContext,
		"run_dir", c.Run.Out, "resumed_at_step", s.state.Step, "staleness", c.Rollout.Staleness)
	return nil
}

// Start returns what the learner of a new run of t is given: for programs
// that build a learner, or only the starting model of a configuration
// (inprocess.StartingModel), outside a run. It plays the validation
// levels' first observations, so that Start.Levels can avoid them, and
// writes nothing.
func (t *Trainer) Start() (*Start, error) {
	if err := t.buildValidationSet(); err != nil {
		return nil, err
	}
	return t.start(""), nil
}

// start is the Start of a run that resumes from resumeFrom ("" for a new
// run), once the validation set is built.
func (t *Trainer) start(resumeFrom string) *Start {
	return &Start{Config: t.cfg, ResumeFrom: resumeFrom, Log: t.log, Demonstrations: t.demoFactory, Levels: t.levels, Now: t.now}
}

// clearRunDir removes what an earlier run left in the run directory before
// a new run starts there (it holds no checkpoint of this run, or
// checkpoint.resume is off). The metrics, events and transcripts are
// truncated by newRecorder.
func (t *Trainer) clearRunDir() error {
	dir := t.cfg.Run.Out
	if exists(filepath.Join(dir, metricsFile)) || exists(filepath.Join(dir, checkpointsDir)) {
		t.log.Warn("starting a new run: replacing the files of the earlier run in the run directory", "dir", dir)
	}
	for _, name := range []string{checkpointsDir, summaryFile} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// writeRunFiles records the run's identity and resolved configuration.
func (t *Trainer) writeRunFiles(id runIdentity) error {
	y, err := t.cfg.YAML()
	if err != nil {
		return err
	}
	if err := atomicdir.WriteFile(filepath.Join(t.cfg.Run.Out, configFile), []byte(y), 0o644); err != nil {
		return err
	}
	return writeJSON(filepath.Join(t.cfg.Run.Out, identityFile), id)
}

func (s *session) close() {
	if s.ahead != nil {
		s.ahead.stop()
		s.ahead = nil
	}
	if s.sampler != nil {
		if err := s.sampler.Close(); err != nil {
			s.log.Warn("closing the sampler", "err", err)
		}
		s.sampler = nil
	}
	if c, ok := s.learner.(io.Closer); ok {
		if err := c.Close(); err != nil {
			s.log.Warn("closing the learner", "err", err)
		}
		s.learner = nil
	}
	if s.rec != nil {
		if err := s.rec.close(); err != nil {
			s.log.Warn("closing the run's files", "err", err)
		}
		s.rec = nil
	}
	s.lock.Release()
}

// layoutKey is a level's identity: its initial observation, which renders
// the whole layout for the grid environments (and the whole task for the
// others).
func (t *Trainer) layoutKey(env envs.Env, seed uint64) (string, error) {
	return env.Reset(seed)
}

// buildValidationSet picks validation.levels seeds from
// validation.seed_base upward with distinct layouts, in the validation
// environment.
func (t *Trainer) buildValidationSet() error {
	c := t.cfg.Validation
	t.valKeys = map[string]bool{}
	t.valSeeds = nil
	if c.Levels == 0 {
		return nil
	}
	env, err := t.valFactory.New()
	if err != nil {
		return err
	}
	for seed := c.SeedBase; len(t.valSeeds) < c.Levels; seed++ {
		if seed-c.SeedBase > uint64(100*c.Levels+1000) {
			return fmt.Errorf("validation.levels: the environment has only %d distinct layouts among %d seeds; "+
				"lower validation.levels and raise validation.samples to validate on each several times, "+
				"or validate on other levels with validation.env_config", len(t.valSeeds), seed-c.SeedBase)
		}
		key, err := t.layoutKey(env, seed)
		if err != nil {
			return err
		}
		if t.valKeys[key] {
			continue
		}
		t.valKeys[key] = true
		t.valSeeds = append(t.valSeeds, seed)
	}
	return nil
}

// levels returns n seeds from base upward whose layouts are not
// validation layouts (Start.Levels).
func (t *Trainer) levels(base uint64, n int) ([]uint64, error) {
	seeds, _, err := t.nextSeeds(base, n)
	return seeds, err
}

// nextSeeds returns n seeds from base upward whose layouts are not
// validation layouts, and the seed after the last one taken.
func (t *Trainer) nextSeeds(base uint64, n int) ([]uint64, uint64, error) {
	env, err := t.factory.New()
	if err != nil {
		return nil, 0, err
	}
	var seeds []uint64
	seed := base
	for ; len(seeds) < n; seed++ {
		if seed-base > uint64(100*n+1000) {
			return nil, 0, fmt.Errorf("only %d levels outside the validation set among %d seeds", len(seeds), seed-base)
		}
		if len(t.valKeys) > 0 {
			key, err := t.layoutKey(env, seed)
			if err != nil {
				return nil, 0, err
			}
			if t.valKeys[key] {
				continue
			}
		}
		seeds = append(seeds, seed)
	}
	return seeds, seed, nil
}
