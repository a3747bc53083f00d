// Package train is the agentrl training loop, importable so that programs
// can register their own environments and train on them:
//
//	cfg, err := train.Load("configs/sokoban.yaml", nil)
//	t, err := train.New(cfg, train.Options{})
//	err = t.Run(ctx)
//
// One step: collect N env groups × K samples with the rollout engine →
// template-collapse metrics on the unfiltered batch (every collapse.every
// steps) → SNR-aware filter on the per-group reward spread → advantages
// (algos preset) → mini-batch updates of the embedded policy (log-probs
// recomputed under the current weights) → metrics, validation, checkpoint.
//
// Everything random derives from run.seed and the step number, so a run
// resumed from a checkpoint continues the same curve as an uninterrupted
// one.
package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentrl/agentrl/algos"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/policy/local"
	"github.com/agentrl/agentrl/policy/native"
	"github.com/agentrl/agentrl/policy/tokenizer"
	"github.com/agentrl/agentrl/rollout"
)

// Options are the trainer's I/O.
type Options struct {
	// Logger receives progress and warnings (default: text to stderr).
	Logger *slog.Logger
	// Console receives one progress line per step (default: stdout).
	Console io.Writer
}

// Trainer runs one training configuration.
type Trainer struct {
	cfg     Config
	log     *slog.Logger
	console io.Writer
	factory *envs.Factory

	// valKeys are the layouts (initial observations) of the validation
	// levels; no warm-start or training level may share one.
	valSeeds []uint64
	valKeys  map[string]bool
}

// New checks the configuration and resolves the environment.
func New(cfg Config, opts Options) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	factory, err := envs.NewFactory(cfg.Env.Name, &cfg.Env.Config)
	if err != nil {
		return nil, err
	}
	t := &Trainer{cfg: cfg, log: opts.Logger, console: opts.Console, factory: factory}
	if t.log == nil {
		t.log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if t.console == nil {
		t.console = os.Stdout
	}
	return t, nil
}

// State is what a checkpoint adds to the weights and optimizer to resume a
// run exactly where it stopped.
type State struct {
	Step          int                `json:"step"`
	NextTrainSeed uint64             `json:"next_train_seed"`
	EarlyStop     *algos.EarlyStop   `json:"early_stop"`
	CollapseEMA   *algos.CollapseEMA `json:"collapse_ema"`
	NaNStreak     int                `json:"nan_streak"`
	// RandomValSuccess is the validation success of a uniformly random
	// policy, measured once.
	RandomValSuccess float64 `json:"random_val_success"`
	// WarmStartValSuccess is the validation success before any RL step.
	WarmStartValSuccess float64 `json:"warm_start_val_success"`
	// Stopped says why the run ended early, if it did.
	Stopped string `json:"stopped,omitempty"`
}

// session is a run in progress.
type session struct {
	*Trainer
	tok    *tokenizer.Tokenizer
	actor  *native.Model
	pol    *local.Policy
	learn  *learner
	engine *rollout.Engine
	valEng *rollout.Engine
	rec    *recorder
	state  State
	sched  native.Schedule
}

// ErrStopped is returned by Run when a stopping rule ended the run early
// (empty batches, collapsed reward variance, repeated non-finite losses).
var ErrStopped = errors.New("training stopped early")

// Run trains until run.steps, a stopping rule, or ctx ends. When ctx ends
// it saves a checkpoint first and returns ctx.Err().
func (t *Trainer) Run(ctx context.Context) error {
	s, err := t.open(ctx)
	if err != nil {
		return err
	}
	defer s.rec.close()
	err = s.loop(ctx)
	if ctx.Err() != nil {
		// Interrupted: save what the last completed step left.
		if serr := s.checkpoint(); serr != nil {
			return errors.Join(ctx.Err(), serr)
		}
		t.log.Info("interrupted: checkpoint saved", "step", s.state.Step, "dir", t.cfg.Run.Out)
		return ctx.Err()
	}
	if err != nil && !errors.Is(err, ErrStopped) {
		return err
	}
	if serr := s.checkpoint(); serr != nil {
		return serr
	}
	return err
}

// open prepares a session: validation levels, the starting model (resumed,
// warm-started or fresh), the learner and the rollout engines.
func (t *Trainer) open(ctx context.Context) (*session, error) {
	c := t.cfg
	if err := os.MkdirAll(c.Run.Out, 0o755); err != nil {
		return nil, err
	}
	if y, err := c.YAML(); err == nil {
		if err := os.WriteFile(filepath.Join(c.Run.Out, configFile), []byte(y), 0o644); err != nil {
			return nil, err
		}
	}
	if err := t.buildValidationSet(); err != nil {
		return nil, err
	}
	early := algos.NewEarlyStop()
	early.EmptyStopSteps = c.Filter.EmptyStopSteps
	if !c.Filter.VarianceEarlyStop {
		early.Patience = 0
	}
	s := &session{Trainer: t, state: State{NextTrainSeed: c.Run.TrainSeedBase, EarlyStop: early, CollapseEMA: algos.NewCollapseEMA(),
		RandomValSuccess: math.NaN(), WarmStartValSuccess: math.NaN()}}
	s.sched = native.Schedule{Peak: c.Algo.LR, Min: c.Algo.LR, Warmup: c.Algo.WarmupSteps}

	var actorOpt *native.AdamW
	var critic *native.Model
	var criticOpt *native.AdamW
	resumed := false
	if c.Checkpoint.Resume {
		ok, err := s.resume()
		if err != nil {
			return nil, err
		}
		resumed = ok
	}
	if resumed {
		actorOpt, critic, criticOpt = s.learn.actorOpt, s.learn.critic, s.learn.criticOpt
	} else {
		ws, err := t.warmStart(ctx)
		if err != nil {
			return nil, err
		}
		s.tok, s.actor = ws.tok, ws.model
		actorOpt = native.NewAdamW(s.actor, 0.9, 0.999, 1e-8, float32(c.Algo.WeightDecay))
		if c.Algo.UsesCritic() {
			if critic, err = native.New(t.modelConfig(s.tok.VocabSize(), true), c.Run.Seed+1); err != nil {
				return nil, err
			}
			criticOpt = native.NewAdamW(critic, 0.9, 0.999, 1e-8, float32(c.Algo.WeightDecay))
		}
	}
	var ref *native.Model
	if c.Algo.UseKLLoss {
		// The reference is the policy the run started from (the warm-started
		// or loaded weights), frozen; a resumed run reloads it.
		var err error
		if resumed {
			if ref, err = s.loadReference(); err != nil {
				return nil, err
			}
		} else {
			if ref, err = native.New(s.actor.Config(), 0); err != nil {
				return nil, err
			}
			copy(ref.Params(), s.actor.Params())
		}
	}
	s.learn = &learner{cfg: c.Algo, actor: s.actor, actorOpt: actorOpt, critic: critic, criticOpt: criticOpt, ref: ref}
	pol, err := local.New(c.Env.Name, s.actor, s.tok)
	if err != nil {
		return nil, err
	}
	s.pol = pol
	if s.engine, err = rollout.New(ctx, c.Rollout, pol, t.factory); err != nil {
		return nil, err
	}
	valCfg := c.Rollout
	valCfg.Sampling.Temperature = c.Validation.Temperature
	if s.valEng, err = rollout.New(ctx, valCfg, pol, t.factory); err != nil {
		return nil, err
	}
	if s.rec, err = newRecorder(c.Run.Out); err != nil {
		return nil, err
	}
	t.log.Info("model", "params", s.actor.NumParams(), "vocab", s.tok.VocabSize(), "max_seq", s.actor.Config().MaxSeq,
		"resumed_at_step", s.state.Step)
	return s, nil
}

// modelConfig is the native architecture for a vocabulary.
func (t *Trainer) modelConfig(vocab int, valueHead bool) native.Config {
	m := t.cfg.Model
	return native.Config{Vocab: vocab, DModel: m.DModel, Layers: m.Layers, Heads: m.Heads, KVHeads: m.KVHeads,
		DFF: m.DFF, MaxSeq: m.MaxSeq, TieEmbeddings: true, ValueHead: valueHead}
}

// layoutKey is a level's identity: its initial observation, which renders
// the whole layout for the grid environments (and the whole task for the
// others).
func (t *Trainer) layoutKey(env envs.Env, seed uint64) (string, error) {
	return env.Reset(seed)
}

// buildValidationSet picks validation.levels seeds from
// validation.seed_base upward with distinct layouts.
func (t *Trainer) buildValidationSet() error {
	c := t.cfg.Validation
	t.valKeys = map[string]bool{}
	t.valSeeds = nil
	if c.Every == 0 {
		return nil
	}
	env, err := t.factory.New()
	if err != nil {
		return err
	}
	for seed := c.SeedBase; len(t.valSeeds) < c.Levels; seed++ {
		if seed-c.SeedBase > uint64(100*c.Levels+1000) {
			return fmt.Errorf("validation: only %d distinct layouts among %d seeds; lower validation.levels", len(t.valSeeds), seed-c.SeedBase)
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

// stepSeed derives the seed of one random stream of one step.
func stepSeed(runSeed uint64, step int, stream uint64) uint64 {
	r := rand.New(rand.NewPCG(runSeed, uint64(step)<<8|stream))
	return r.Uint64()
}

// loop runs validation and training steps.
func (s *session) loop(ctx context.Context) error {
	c := s.cfg
	if math.IsNaN(s.state.RandomValSuccess) && len(s.valSeeds) > 0 {
		r, err := s.randomBaseline(ctx)
		if err != nil {
			return err
		}
		s.state.RandomValSuccess = r
		s.log.Info("validation: random policy", "success", r, "levels", len(s.valSeeds))
	}
	if s.state.Step == 0 && c.Validation.Every > 0 {
		m, err := s.validate(ctx)
		if err != nil {
			return err
		}
		s.state.WarmStartValSuccess = m["val-env/success"]
		if err := s.rec.record(0, m); err != nil {
			return err
		}
		fmt.Fprintln(s.console, progressLine(0, c.Run.Steps, 0, 0, m))
	}
	start := time.Now()
	done := 0
	for s.state.Step < c.Run.Steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		stepStart := time.Now()
		m, err := s.step(ctx)
		if err != nil {
			return err
		}
		step := s.state.Step
		if c.Validation.Every > 0 && step%c.Validation.Every == 0 {
			vm, err := s.validate(ctx)
			if err != nil {
				return err
			}
			for k, v := range vm {
				m[k] = v
			}
		}
		m["timing_s/step"] = time.Since(stepStart).Seconds()
		if err := s.rec.record(step, m); err != nil {
			return err
		}
		done++
		fmt.Fprintln(s.console, progressLine(step, c.Run.Steps, time.Since(stepStart), time.Since(start)/time.Duration(done), m))
		if c.Checkpoint.Every > 0 && step%c.Checkpoint.Every == 0 {
			if err := s.checkpoint(); err != nil {
				return err
			}
		}
		if s.state.Stopped != "" {
			s.log.Warn("stopping early", "reason", s.state.Stopped, "step", step)
			return fmt.Errorf("%w: %s", ErrStopped, s.state.Stopped)
		}
	}
	return nil
}

// step runs one RL step and returns its metrics. The state advances only
// when the step completes, so an interrupted step is redone on resume.
func (s *session) step(ctx context.Context) (map[string]float64, error) {
	c := s.cfg
	step := s.state.Step + 1
	m := map[string]float64{}

	t0 := time.Now()
	seeds, next, err := s.nextSeeds(s.state.NextTrainSeed, c.Run.Groups)
	if err != nil {
		return nil, err
	}
	trajs, err := s.engine.Run(ctx, seeds, c.Run.GroupSize, stepSeed(c.Run.Seed, step, 1))
	if err != nil {
		return nil, err
	}
	m["timing_s/rollout"] = time.Since(t0).Seconds()
	for k, v := range rollout.Metrics("train", trajs, c.Run.GroupSize) {
		m[k] = v
	}

	if c.Collapse.Every > 0 && (step == 1 || step%c.Collapse.Every == 0) {
		cm, err := collapseMetrics(ctx, s.pol, trajs, c.Collapse, s.state.CollapseEMA, rand.New(rand.NewPCG(stepSeed(c.Run.Seed, step, 3), 0)))
		if err != nil {
			return nil, fmt.Errorf("collapse metrics: %w", err)
		}
		for k, v := range cm {
			m[k] = v
		}
	}

	if c.Filter.DynamicSampling {
		var dm map[string]float64
		if trajs, next, dm, err = s.dynamicSampling(ctx, step, trajs, next); err != nil {
			return nil, err
		}
		for k, v := range dm {
			m[k] = v
		}
	}

	// Groups with a failed trajectory are left out whole: their reward
	// spread would be computed from a partial group.
	scores := make([]float64, len(trajs))
	groupOK := make([]bool, len(trajs)/c.Run.GroupSize)
	for g := range groupOK {
		groupOK[g] = true
	}
	for i, tr := range trajs {
		scores[i] = tr.Score
		if tr.Err != "" {
			groupOK[tr.Group] = false
		}
	}
	groups, err := algos.ContiguousGroups(len(trajs), c.Run.GroupSize)
	if err != nil {
		return nil, err
	}
	var okGroups algos.Groups
	for g, members := range groups {
		if groupOK[g] {
			okGroups = append(okGroups, members)
		}
	}
	m["rollout/failed_groups"] = float64(len(groups) - len(okGroups))
	filt := algos.FilterResult{Empty: true}
	if len(okGroups) > 0 {
		if filt, err = algos.FilterGroups(c.Filter.FilterConfig, scores, okGroups); err != nil {
			return nil, fmt.Errorf("filter: %w", err)
		}
		for k, v := range filt.Metrics() {
			m[k] = v
		}
	}
	if reason, err := s.state.EarlyStop.Observe(filt.Empty, meanStd(filt)); err != nil {
		return nil, err
	} else if reason != "" {
		s.state.Stopped = reason
	}
	for k, v := range s.state.EarlyStop.Metrics() {
		m[k] = v
	}

	var kept []rollout.Trajectory
	var keptGroups algos.Groups
	for _, g := range filt.Kept {
		var members []int
		for _, i := range okGroups[g] {
			members = append(members, len(kept))
			kept = append(kept, trajs[i])
		}
		keptGroups = append(keptGroups, members)
	}

	if len(kept) > 0 {
		t1 := time.Now()
		um, err := s.update(ctx, step, kept, keptGroups)
		if err != nil {
			return nil, err
		}
		for k, v := range um {
			m[k] = v
		}
		m["timing_s/update"] = time.Since(t1).Seconds()
	}

	if c.Run.TranscriptsEvery > 0 && step%c.Run.TranscriptsEvery == 0 {
		if err := s.rec.transcripts(step, "train", trajs, 4); err != nil {
			return nil, err
		}
	}
	s.state.Step, s.state.NextTrainSeed = step, next
	return m, nil
}

// dynamicSampling is DAPO's dynamic sampling: it drops the groups whose
// samples all scored the same and samples fresh groups (new levels) to
// refill the batch to run.groups, for at most filter.max_sample_rounds
// rounds. The returned trajectories hold whole groups, renumbered 0..n-1.
func (s *session) dynamicSampling(ctx context.Context, step int, trajs []rollout.Trajectory, next uint64) ([]rollout.Trajectory, uint64, map[string]float64, error) {
	c := s.cfg
	k := c.Run.GroupSize
	var out []rollout.Trajectory
	dropped, rounds := 0, 0
	for {
		scores := make([]float64, len(trajs))
		for i, tr := range trajs {
			scores[i] = tr.Score
		}
		groups, err := algos.ContiguousGroups(len(trajs), k)
		if err != nil {
			return nil, 0, nil, err
		}
		r, err := algos.DynamicSampling(scores, groups, len(out)/k, c.Run.Groups)
		if err != nil {
			return nil, 0, nil, err
		}
		dropped += r.ZeroVarianceCount
		for _, g := range r.Kept {
			if len(out)/k == c.Run.Groups {
				break
			}
			for _, i := range groups[g] {
				tr := trajs[i]
				tr.Group = len(out) / k
				out = append(out, tr)
			}
		}
		rounds++
		if r.NeedGroups == 0 || rounds >= c.Filter.MaxSampleRounds {
			break
		}
		seeds, n, err := s.nextSeeds(next, r.NeedGroups)
		if err != nil {
			return nil, 0, nil, err
		}
		next = n
		if trajs, err = s.engine.Run(ctx, seeds, k, stepSeed(c.Run.Seed, step, 16+uint64(rounds))); err != nil {
			return nil, 0, nil, err
		}
	}
	return out, next, map[string]float64{
		"rollout/dynamic_sampling_rounds":  float64(rounds),
		"rollout/dynamic_sampling_dropped": float64(dropped),
		"rollout/dynamic_sampling_groups":  float64(len(out) / k),
	}, nil
}

// update computes advantages for the kept trajectories and trains on them.
func (s *session) update(ctx context.Context, step int, kept []rollout.Trajectory, groups algos.Groups) (map[string]float64, error) {
	c := s.cfg
	seqs := newSequences(kept)
	scores := make([]float64, len(seqs.tokens))
	for i, ep := range seqs.episode {
		scores[i] = kept[ep].Score
	}
	in := algos.AdvantageInput{Scores: scores, Groups: groups, Mask: seqs.mask, OldLogProb: seqs.oldLP}
	if s.learn.critic != nil {
		v, err := forwardNoGrad(ctx, s.learn.critic, seqs, c.Algo.MiniBatch, func(o *native.Outputs) [][]float32 { return o.Value })
		if err != nil {
			return nil, err
		}
		in.Values, seqs.oldV = v, v
	}
	if c.Algo.UseKLInReward {
		if s.learn.ref == nil {
			return nil, errors.New("algo.use_kl_in_reward needs a reference model (set algo.use_kl_loss or a positive kl_coef)")
		}
		ref, err := forwardNoGrad(ctx, s.learn.ref, seqs, c.Algo.MiniBatch, func(o *native.Outputs) [][]float32 { return o.LogProb })
		if err != nil {
			return nil, err
		}
		in.RefLogProb = ref
	}
	var adv, ret [][]float64
	var err error
	if len(seqs.tokens) != len(kept) && !c.Algo.UsesTokenEstimator() {
		// A history window splits episodes into per-turn sequences; group
		// estimators still count each episode once (RAGEN), so they run on
		// one row per episode and the advantage is spread to its turns.
		adv, ret, err = episodeAdvantages(c.Algo.Preset, kept, groups, seqs)
	} else {
		adv, ret, err = c.Algo.Advantages(in)
	}
	if err != nil {
		return nil, fmt.Errorf("advantages: %w", err)
	}
	seqs.adv, seqs.ret = adv, ret
	lr := s.sched.LR(step - 1)
	st, err := s.learn.update(ctx, seqs, lr, c.Algo.CriticLR, rand.New(rand.NewPCG(stepSeed(c.Run.Seed, step, 2), 0)))
	if err != nil {
		return nil, err
	}
	if st.skipped > 0 {
		s.state.NaNStreak++
		s.log.Warn("non-finite loss or gradient: updates skipped", "step", step, "skipped", st.skipped, "of", st.miniBatches)
		if s.state.NaNStreak >= c.Run.NaNStopStreak {
			s.state.Stopped = fmt.Sprintf("%d consecutive steps with non-finite losses", s.state.NaNStreak)
		}
	} else {
		s.state.NaNStreak = 0
	}
	st.metrics["actor/kept_trajectories"] = float64(len(kept))
	return st.metrics, nil
}

// validate plays every validation level once.
func (s *session) validate(ctx context.Context) (map[string]float64, error) {
	t0 := time.Now()
	trajs, err := s.valEng.Run(ctx, s.valSeeds, 1, stepSeed(s.cfg.Run.Seed, s.state.Step, 4))
	if err != nil {
		return nil, err
	}
	m := rollout.Metrics("val-env", trajs, 1)
	m["val-env/random_success"] = s.state.RandomValSuccess
	m["timing_s/validation"] = time.Since(t0).Seconds()
	if err := s.rec.transcripts(s.state.Step, "val", trajs, 4); err != nil {
		return nil, err
	}
	return m, nil
}

// randomBaseline is the validation success of a policy that answers each
// turn with uniformly random actions from the vocabulary, through the same
// rollout rules.
func (s *session) randomBaseline(ctx context.Context) (float64, error) {
	c := s.cfg
	model := randomChat{actions: nil, sep: c.Rollout.ActionSeparator, n: c.Rollout.MaxActionsPerTurn, think: c.Rollout.Think}
	env, err := s.factory.New()
	if err != nil {
		return 0, err
	}
	model.actions = env.Actions()
	if len(model.actions) == 0 {
		return math.NaN(), nil
	}
	trajs, err := rollout.RunChat(ctx, c.Rollout, model, s.factory, s.valSeeds)
	if err != nil {
		return 0, err
	}
	return rollout.Metrics("random", trajs, 1)["random/success"], nil
}

// meanStd is the filter's mean in-group reward std, 0 for an empty result.
func meanStd(f algos.FilterResult) float64 {
	if len(f.Stats) == 0 {
		return 0
	}
	return f.MeanInGroupStd()
}

// randomChat answers every turn with uniformly random actions; its
// randomness comes from the sampling seed the rollout passes.
type randomChat struct {
	actions []string
	sep     string
	n       int
	think   bool
}

func (r randomChat) Chat(_ context.Context, _ []policy.Message, sp policy.Sampling) (string, error) {
	rng := rand.New(rand.NewPCG(sp.Seed, 0x7a4d))
	picks := make([]string, r.n)
	for i := range picks {
		picks[i] = r.actions[rng.IntN(len(r.actions))]
	}
	answer := "<answer>" + strings.Join(picks, " "+r.sep+" ") + "</answer>"
	if r.think {
		return "<think></think>" + answer, nil
	}
	return answer, nil
}

// episodeAdvantages runs a group estimator on one row per episode and
// broadcasts each episode's advantage to the masked tokens of its sequences.
//
// Each sequence's advantage is also scaled by (sequences/episodes)/turns
// of its episode, so that every episode carries the same total weight, as
// it does when the whole conversation is one sequence. Without it, failed
// episodes (which run to the turn limit) outweigh short successful ones
// several times over, and the negative advantage they spread over the
// shared format and reasoning tokens drags those down.
func episodeAdvantages(p algos.Preset, kept []rollout.Trajectory, groups algos.Groups, seqs *sequences) (adv, ret [][]float64, err error) {
	in := algos.AdvantageInput{Groups: groups, Mask: make([][]bool, len(kept))}
	for i := range kept {
		in.Scores = append(in.Scores, kept[i].Score)
		in.Mask[i] = []bool{true}
	}
	perEpisode, _, err := p.Advantages(in)
	if err != nil {
		return nil, nil, err
	}
	turns := make([]int, len(kept))
	for _, ep := range seqs.episode {
		turns[ep]++
	}
	balance := float64(len(seqs.episode)) / float64(len(kept))
	values := make([]float64, len(seqs.episode))
	for i, ep := range seqs.episode {
		values[i] = perEpisode[ep][0] * balance / float64(turns[ep])
	}
	adv, err = algos.BroadcastToTokens(values, seqs.mask)
	return adv, adv, err
}
