// Package tinkerlearner is the learner on a Tinker API server (hosted
// Tinker, SkyRL's server, `trainer serve`'s Tinker routes, or with
// tinker.url local an offline server this process starts over the run's
// starting model). The server holds the weights and the optimizer and
// samples the rollouts; the loss stays agentrl's. It registers as train's
// "tinker" learner (docs/tinker.md):
//
//	import _ "github.com/agentrl/agentrl/train/tinkerlearner"
package tinkerlearner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentrl/agentrl/algos"
	"github.com/agentrl/agentrl/client/tinker"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/train"
	"github.com/agentrl/agentrl/train/inprocess"
)

func init() {
	train.RegisterLearner(train.LearnerTinker, train.LearnerRegistration{
		Description: "trains on a Tinker API server (tinker.url), which also samples the rollouts",
		New:         New,
	})
}

// New is the Tinker learner's factory (a train.LearnerFactory): the run's
// starting model (inprocess.StartingModel: model.init or the warm start),
// which the server must serve as its base model, and on the server a new
// model from it, or resumed, the model of the checkpoint loaded there.
func New(ctx context.Context, start *train.Start) (train.Learner, error) {
	c := start.Config
	ws, err := inprocess.StartingModel(ctx, start)
	if err != nil {
		return nil, err
	}
	pol, err := ws.Policy(c.Env.Name)
	if err != nil {
		return nil, err
	}
	tok, err := ws.TokenizerBytes()
	if err != nil {
		return nil, err
	}
	if !c.Tinker.Local() {
		where := ws.Dir
		if where == "" {
			where = "(a fresh model, in memory only: set warm_start.enabled or model.init)"
		}
		start.Log.Info("tinker: the server must serve the run's starting model", "dir", where)
	}
	if start.ResumeFrom != "" {
		return load(ctx, c, start.ResumeFrom, pol, tok, start.Log)
	}
	return create(ctx, c, pol, tok, start.Log)
}

// tinkerFile is the record of a Tinker learner's checkpoint: the server's
// paths of the weights, with which a resumed run rebuilds the model there.
const tinkerFile = local.TinkerRecordFile

// tinkerRecord is tinkerFile's content.
type tinkerRecord struct {
	BaseModel string `json:"base_model"`
	ModelID   string `json:"model_id"`
	// StatePath is the tinker:// path of the weights and optimizer state
	// (save_weights), which load_weights restores.
	StatePath string `json:"state_path"`
	// SamplerPath is the tinker:// path of the same weights for sampling.
	SamplerPath string `json:"sampler_path"`
	// Updates counts the learner's completed Update calls.
	Updates int               `json:"updates"`
	LoRA    tinker.LoraConfig `json:"lora"`
}

// tinkerLearner is the Learner on a Tinker API server. The server holds
// the weights and the optimizer, and samples; the loss stays agentrl's.
// Each mini-batch of an Update is
//
//	forward          the current log-probs log π(y_t) of the batch's tokens
//	(Go)             algos' actor loss L and its per-token gradient g_t = ∂L/∂log π(y_t)
//	forward_backward cross_entropy with weights w_t = −g_t
//	optim_step       AdamW, the run's clip and learning rate
//
// cross_entropy's loss is −Σ_t w_t log π(y_t), whose gradient with respect
// to the parameters is Σ_t g_t ∇log π(y_t) = ∇L: the linearised loss is
// exact to first order, which is all a gradient step uses. An entropy
// bonus depends on the whole next-token distribution, which the API does
// not return; its gradient enters through the score-function estimate on
// the sampled tokens, ∇H_t ≈ −log π(y_t) ∇log π(y_t) (unbiased for tokens
// sampled from the current policy), and the entropy reported is the
// sampled tokens' −log π(y_t). With tinker.loss ppo the server's own ppo
// loss replaces the first two calls.
//
// Policy samples on the server from the weights of the last Update, saved
// for the sampler after every Update (save_weights_for_sampler); the
// reference of a KL term is the server's base model, scored through
// prompt log-probs.
type tinkerLearner struct {
	algo  train.AlgoConfig
	loss  string
	log   *slog.Logger
	model *tinker.TrainingModel
	// client is the session; it belongs to the learner, and closes with it.
	client *tinker.Client
	local  *local.Policy
	// tokenizerSHA identifies local's tokenizer.
	tokenizerSHA string
	rec          tinkerRecord
	// savedAt is rec.Updates when rec.StatePath was saved.
	savedAt int
	sampler *tinker.Sampler
	ref     *tinker.Sampler // nil without a KL term
	// stop ends an offline server the learner started (tinker.url local);
	// offline says there is one.
	stop    func()
	offline bool
	// url is the server's, outage how long Recover waits for it.
	url    string
	outage time.Duration
	// engine is the server's engine, ignored what it does not apply of
	// the run's settings (IgnoredSettings).
	engine  tinker.EngineReport
	ignored []string
	// lrWarned is set once the server reported applying another learning
	// rate than the one sent.
	lrWarned bool
}

var (
	_ train.Learner            = (*tinkerLearner)(nil)
	_ train.RemoteWeights      = (*tinkerLearner)(nil)
	_ train.ArithmeticReporter = (*tinkerLearner)(nil)
	_ train.Snapshotter        = (*tinkerLearner)(nil)
	_ train.Recoverer          = (*tinkerLearner)(nil)
)

// tinkerAdam is the in-process learner's AdamW (native.NewAdamW in
// newNativeLearner), so that a step on a server equals a step in process.
func tinkerAdam(a train.AlgoConfig, lr float64) tinker.AdamParams {
	return tinker.AdamParams{LearningRate: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: a.WeightDecay, GradClipNorm: a.GradClip}
}

// tinkerLoRA is the model's LoRA configuration on the server: the run's
// model.lora (rank 0 trains every weight, which only the offline server
// offers), with the in-process learner's seed so that both start from the
// same adapters.
func tinkerLoRA(cfg train.Config) tinker.LoraConfig {
	c := tinker.LoraConfig{Rank: cfg.Model.LoRA.Rank}
	if c.Rank > 0 {
		n := cfg.Model.LoRA.Native(cfg.Run.Seed)
		seed, alpha := int64(n.Seed), n.Alpha
		c.Seed, c.Alpha = &seed, &alpha
		attn, mlp := false, false
		for _, t := range n.Targets {
			switch t {
			case "q_proj", "k_proj", "v_proj", "o_proj":
				attn = true
			default:
				mlp = true
			}
		}
		c.TrainAttn, c.TrainMLP = &attn, &mlp
	}
	f := false
	c.TrainUnembed = &f
	return c
}

// tinkerConnect opens a session on the configured server (starting the
// offline one for url local) and finds the base model.
func tinkerConnect(ctx context.Context, cfg train.Config, start *local.Policy, stateDir string, log *slog.Logger) (_ *tinker.Client, base string, stop func(), err error) {
	tc := cfg.Tinker
	base, addr, key := tc.BaseModel, strings.TrimSpace(tc.URL), tc.APIKey
	stop = func() {}
	if tc.Local() {
		if addr, base, stop, err = startLocalTinker(ctx, start, stateDir, log); err != nil {
			return nil, "", nil, fmt.Errorf("tinker.url local: %w", err)
		}
	}
	if key == "" {
		key = os.Getenv("TINKER_API_KEY")
	}
	c, err := tinker.NewClient(ctx, tinker.Options{BaseURL: addr, APIKey: key, CredentialCmd: os.Getenv("TINKER_CREDENTIAL_CMD"), Logger: log,
		FutureTimeout: time.Duration(tc.FutureTimeoutS * float64(time.Second)), Tags: []string{"agentrl", cfg.Env.Name}})
	if err != nil {
		stop()
		return nil, "", nil, fmt.Errorf("tinker.url %s: %w", tc.URL, err)
	}
	if base == "" {
		caps, err := c.Capabilities(ctx)
		if err == nil && len(caps.SupportedModels) == 0 {
			err = errors.New("the server lists no models")
		}
		if err != nil {
			c.Close()
			stop()
			return nil, "", nil, fmt.Errorf("tinker.base_model is not set, and the server's models are unknown: %w", err)
		}
		base = caps.SupportedModels[0].ModelName
	}
	return c, base, stop, nil
}

// create creates the model on the server from the run's starting model
// start (the warm start's or model.init's, which the server must serve as
// its base model; url local serves start itself).
func create(ctx context.Context, cfg train.Config, start *local.Policy, tokenizerBytes []byte, log *slog.Logger) (*tinkerLearner, error) {
	l, err := open(ctx, cfg, start, tokenizerBytes, log)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			l.Close()
		}
	}()
	if l.model, err = l.client.CreateModel(ctx, l.rec.BaseModel, l.rec.LoRA); err != nil {
		return nil, fmt.Errorf("tinker: create_model %s: %w", l.rec.BaseModel, err)
	}
	l.rec.ModelID = l.model.ID()
	if err := l.checkBase(ctx, cfg.Tinker.ProbeTolerance); err != nil {
		return nil, err
	}
	if err := l.publish(ctx); err != nil {
		return nil, err
	}
	ok = true
	return l, nil
}

// load resumes a Tinker learner from a checkpoint directory: a new model
// on the server, loaded from the checkpoint's saved state.
func load(ctx context.Context, cfg train.Config, dir string, start *local.Policy, tokenizerBytes []byte, log *slog.Logger) (*tinkerLearner, error) {
	raw, err := os.ReadFile(filepath.Join(dir, tinkerFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s has no %s: the checkpoint was not written by a run with tinker.url", dir, tinkerFile)
	}
	if err != nil {
		return nil, err
	}
	var rec tinkerRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, tinkerFile), err)
	}
	l, err := open(ctx, cfg, start, tokenizerBytes, log)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			l.Close()
		}
	}()
	if l.rec.BaseModel != rec.BaseModel {
		return nil, fmt.Errorf("tinker: the checkpoint trained %s, the server's base model is now %s", rec.BaseModel, l.rec.BaseModel)
	}
	if rec.LoRA.Rank != l.rec.LoRA.Rank {
		return nil, fmt.Errorf("tinker: the checkpoint trained LoRA rank %d, model.lora.rank is %d", rec.LoRA.Rank, l.rec.LoRA.Rank)
	}
	if l.model, err = l.client.ResumeModel(ctx, rec.BaseModel, l.rec.LoRA, rec.StatePath); err != nil {
		return nil, fmt.Errorf("tinker: loading %s: %w", rec.StatePath, err)
	}
	l.rec.ModelID, l.rec.Updates = l.model.ID(), rec.Updates
	if err := l.checkBase(ctx, cfg.Tinker.ProbeTolerance); err != nil {
		return nil, err
	}
	if err := l.publish(ctx); err != nil {
		return nil, err
	}
	ok = true
	return l, nil
}

// open connects and fills everything but the model.
func open(ctx context.Context, cfg train.Config, start *local.Policy, tokenizerBytes []byte, log *slog.Logger) (*tinkerLearner, error) {
	c, base, stop, err := tinkerConnect(ctx, cfg, start, filepath.Join(cfg.Run.Out, "tinker"), log)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(tokenizerBytes)
	l := &tinkerLearner{algo: cfg.Algo, loss: cfg.Tinker.Loss, log: log, client: c, local: start, stop: stop, offline: cfg.Tinker.Local(),
		url: cfg.Tinker.URL, outage: cfg.Tinker.Outage,
		tokenizerSHA: hex.EncodeToString(sum[:]), rec: tinkerRecord{BaseModel: base, LoRA: tinkerLoRA(cfg)}}
	if cfg.NeedsReference() {
		l.ref = tinker.NewSampler(c, start, tinker.SamplerTarget{BaseModel: base})
	}
	if err := l.checkEngine(ctx, cfg); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// checkEngine identifies the server's engine and compares the run's
// settings with what it applies (engines.go): an error for those it would
// get wrong, the others logged and kept for IgnoredSettings.
func (l *tinkerLearner) checkEngine(ctx context.Context, cfg train.Config) error {
	if l.offline {
		l.engine = tinker.EngineReport{Engine: tinker.EngineAgentrl, Evidence: []string{"tinker.url local: the offline server in this process"}}
	} else {
		ids, err := l.local.Encode(ctx, train.ProbeText)
		if err != nil {
			return err
		}
		if len(ids) < 2 {
			return errNoProbe
		}
		if l.engine, err = l.client.DetectEngine(ctx, l.rec.BaseModel, ids[:min(len(ids), 16)]); err != nil {
			return fmt.Errorf("tinker: identifying the server's engine: %w", err)
		}
	}
	l.log.Info("tinker: engine identified", "engine", l.engine.Engine, "evidence", strings.Join(l.engine.Evidence, "; "), "wire", l.client.WireDialect())
	ignored, err := checkEngine(l.engine, cfg)
	if err != nil {
		return err
	}
	l.ignored = ignored
	if len(ignored) > 0 {
		// One warning for all of them; run.json records them too (Model).
		l.log.Warn("tinker: the server's engine does not apply these settings as configured (run.json records them: model.config.ignored_settings)",
			"engine", l.engine.Engine, "count", len(ignored), "settings", strings.Join(ignored, "; "))
	}
	return nil
}

// IgnoredSettings returns the run's settings that the server's engine
// does not apply as configured, checked before the first step, one line
// each: the key, then what the engine does instead. Settings it would get
// wrong beyond repair made New fail instead.
func (l *tinkerLearner) IgnoredSettings() []string { return slices.Clone(l.ignored) }

// Engine returns the server's engine, as identified at start.
func (l *tinkerLearner) Engine() tinker.EngineReport { return l.engine }

// Close ends the session (and an offline server the learner started).
func (l *tinkerLearner) Close() error {
	err := l.client.Close()
	l.stop()
	return err
}

// checkBase compares the server's base model with the run's starting
// model on a probe: the mean |Δ log-prob| must be within tol (tol < 0
// skips the check).
func (l *tinkerLearner) checkBase(ctx context.Context, tol float64) error {
	if tol < 0 {
		return nil
	}
	ids, err := l.local.Encode(ctx, train.ProbeText)
	if err != nil {
		return err
	}
	if n := l.local.Info().MaxContext; len(ids) > n {
		ids = ids[:n]
	}
	req := []policy.ScoreRequest{{Prompt: ids[:1], Continuation: ids[1:]}}
	mine, err := l.local.Score(ctx, req)
	if err != nil {
		return err
	}
	base := tinker.NewSampler(l.client, l.local, tinker.SamplerTarget{BaseModel: l.rec.BaseModel})
	theirs, err := base.Score(ctx, req)
	if err != nil {
		return fmt.Errorf("tinker: scoring the start-up probe on %s: %w", l.rec.BaseModel, err)
	}
	var sum float64
	for i, v := range mine[0] {
		sum += math.Abs(v - theirs[0][i])
	}
	mean := sum / float64(len(mine[0]))
	l.log.Info("tinker: base model checked", "base_model", l.rec.BaseModel, "probe_tokens", len(mine[0]), "mean_abs_dlogp", mean)
	if !(mean <= tol) {
		return fmt.Errorf("tinker: the server's %s scores the probe %.3g nats/token away from the run's starting model (tinker.probe_tolerance %g): the server serves another model; serve the run's starting model (model.init or the warm start's checkpoint) or raise the tolerance", l.rec.BaseModel, mean, tol)
	}
	return nil
}

// publish saves the current weights for the sampler and points Policy at
// them: policy version rec.Updates.
func (l *tinkerLearner) publish(ctx context.Context) error {
	path, err := l.model.SaveWeightsForSampler(ctx, fmt.Sprintf("v%d", l.rec.Updates))
	if err != nil {
		return fmt.Errorf("tinker: save_weights_for_sampler: %w", err)
	}
	l.rec.SamplerPath = path
	if l.sampler == nil {
		l.sampler = tinker.NewSampler(l.client, l.local, tinker.SamplerTarget{ModelPath: path})
	} else {
		l.sampler.SetModelPath(path)
	}
	return nil
}

// Policy implements train.Learner: the server's sampler on the latest
// weights.
func (l *tinkerLearner) Policy() policy.Policy { return l.sampler }

// Snapshot implements train.Snapshotter: a sampler of the server's
// sampler weights saved after the last Update, which later updates leave
// where they are.
func (l *tinkerLearner) Snapshot(context.Context) (policy.Policy, error) {
	if l.rec.SamplerPath == "" {
		return nil, errors.New("tinker: no sampler weights saved yet")
	}
	return tinker.NewSampler(l.client, l.local, tinker.SamplerTarget{ModelPath: l.rec.SamplerPath}), nil
}

// Recover implements train.Recoverer: it asks the server about the model,
// waiting out an outage (tinker.outage), and reports whether the server
// lost it (a restart: the run resumes from its last checkpoint, whose
// saved state a server on the same state directory still holds).
func (l *tinkerLearner) Recover(ctx context.Context) (bool, error) {
	deadline := time.Now().Add(l.outage)
	delay := time.Second
	for {
		_, err := l.model.Info(ctx)
		var ae *tinker.APIError
		switch {
		case err == nil:
			return false, nil
		case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
			return true, nil
		case errors.As(err, &ae) && !ae.Retryable, ctx.Err() != nil:
			return false, err
		case time.Now().After(deadline):
			return false, fmt.Errorf("tinker: the server did not answer within tinker.outage (%v): %w", l.outage, err)
		}
		l.log.Warn("tinker: waiting for the server", "url", l.url, "retry_in", delay, "err", err)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		}
		delay = min(2*delay, 30*time.Second)
	}
}

// WeightsNote implements train.RemoteWeights.
func (l *tinkerLearner) WeightsNote(dir string) string {
	return "the weights stay on the Tinker server: " + filepath.Join(dir, tinkerFile)
}

// ArithmeticID implements train.ArithmeticReporter: the native kernels'
// arithmetic when the offline server in this process computes the
// updates, nothing for a remote server.
func (l *tinkerLearner) ArithmeticID() string {
	if !l.offline {
		return ""
	}
	id, _ := native.ArithmeticID()
	return id
}

// Model implements train.Learner.
func (l *tinkerLearner) Model() train.ModelInfo {
	info := train.ModelInfo{Kind: train.LearnerTinker, TokenizerSHA256: l.tokenizerSHA,
		Config: map[string]any{"base_model": l.rec.BaseModel}}
	m := l.local.Lock()
	info.Params = m.NumParams()
	if raw, err := json.Marshal(m.Config()); err == nil {
		var arch map[string]any
		if json.Unmarshal(raw, &arch) == nil {
			info.Config["architecture"] = arch
		}
	}
	l.local.Unlock()
	// The engine and what it ignores go to run.json with the model: which
	// settings were not applied is part of what the run computed.
	info.Config["engine"] = string(l.engine.Engine)
	info.Config["engine_evidence"] = slices.Clone(l.engine.Evidence)
	info.Config["ignored_settings"] = append([]string{}, l.ignored...)
	if r := l.rec.LoRA; r.Rank > 0 {
		info.LoRA = &train.LoRAInfo{Rank: r.Rank}
		if r.Alpha != nil {
			info.LoRA.Alpha = *r.Alpha
		}
	}
	return info
}

// Save implements train.Learner: the server saves the weights and optimizer
// state, and dir records where.
func (l *tinkerLearner) Save(ctx context.Context, dir string) error {
	// A second checkpoint of the same weights (the periodic one, then the
	// final one) reuses the saved state: names are unique on the server.
	if l.rec.StatePath == "" || l.savedAt != l.rec.Updates {
		path, err := l.model.SaveWeights(ctx, fmt.Sprintf("u%d", l.rec.Updates))
		if err != nil {
			return fmt.Errorf("tinker: save_weights: %w", err)
		}
		l.rec.StatePath, l.savedAt = path, l.rec.Updates
	}
	rec := l.rec
	raw, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, tinkerFile), append(raw, '\n'), 0o644)
}

// datum is sequence tokens as a Tinker datum: input x_0..x_{n−2}, targets
// x_1..x_{n−1}, and the per-target inputs given for positions 1..n−1.
func datum(tokens []int, inputs map[string][]float64) tinker.Datum {
	n := len(tokens)
	d := tinker.Datum{ModelInput: tinker.TokensInput(tokens[:n-1]),
		LossFnInputs: map[string]tinker.TensorData{tinker.InputTargetTokens: tinker.Ints(tokens[1:])}}
	for k, v := range inputs {
		d.LossFnInputs[k] = tinker.Floats(v[1:])
	}
	return d
}

// trainable reports the sequences with at least two tokens (a target).
func trainable(s *train.Sequences) []int {
	var idx []int
	for i, t := range s.Tokens {
		if len(t) >= 2 {
			idx = append(idx, i)
		}
	}
	return idx
}

// forwardLogProbs returns the current weights' log-probs of s's tokens in
// the Sequences layout (row[t] is log π(x_t | x_<t), 0 at t = 0 and off the
// mask), chunk sequences per forward call.
func (l *tinkerLearner) forwardLogProbs(ctx context.Context, s *train.Sequences, chunk int) ([][]float64, error) {
	out := make([][]float64, s.Len())
	for i := range out {
		out[i] = make([]float64, len(s.Tokens[i]))
	}
	idx := trainable(s)
	for lo := 0; lo < len(idx); lo += chunk {
		part := idx[lo:min(lo+chunk, len(idx))]
		data := make([]tinker.Datum, len(part))
		for j, i := range part {
			data[j] = datum(s.Tokens[i], map[string][]float64{tinker.InputWeights: make([]float64, len(s.Tokens[i]))})
		}
		res, err := l.model.Forward(ctx, tinker.ForwardBackwardInput{Data: data, LossFn: tinker.LossCrossEntropy})
		if err != nil {
			return nil, err
		}
		for j, i := range part {
			lp, ok := res.LossFnOutputs[j][tinker.InputLogprobs]
			if !ok {
				return nil, fmt.Errorf("tinker: forward: datum %d has no logprobs output", j)
			}
			vals, err := lp.Dense()
			if err != nil {
				return nil, fmt.Errorf("tinker: forward: datum %d: %w", j, err)
			}
			if len(vals) != len(s.Tokens[i])-1 {
				return nil, fmt.Errorf("tinker: forward: datum %d has %d log-probs for %d targets", j, len(vals), len(s.Tokens[i])-1)
			}
			for t, v := range vals {
				if s.Mask[i][t+1] {
					out[i][t+1] = v
				}
			}
		}
	}
	return out, nil
}

// Prepare implements train.Learner.
func (l *tinkerLearner) Prepare(ctx context.Context, seqs *train.Sequences) error {
	seqs.OldValues, seqs.RefLogProb = nil, nil
	if l.algo.RecomputeOldLogProb {
		if seqs.SamplerLogProb == nil {
			seqs.SamplerLogProb = seqs.OldLogProb
		}
		lp, err := l.forwardLogProbs(ctx, seqs, l.algo.MiniBatch)
		if err != nil {
			return fmt.Errorf("recomputing the old log-probs: %w", err)
		}
		seqs.OldLogProb = lp
	}
	if l.ref != nil {
		reqs := make([]policy.ScoreRequest, 0, seqs.Len())
		idx := trainable(seqs)
		for _, i := range idx {
			reqs = append(reqs, policy.ScoreRequest{Prompt: seqs.Tokens[i][:1], Continuation: seqs.Tokens[i][1:]})
		}
		scores, err := l.ref.Score(ctx, reqs)
		if err != nil {
			return fmt.Errorf("reference log-probs: %w", err)
		}
		seqs.RefLogProb = make([][]float64, seqs.Len())
		for i := range seqs.RefLogProb {
			seqs.RefLogProb[i] = make([]float64, len(seqs.Tokens[i]))
		}
		for j, i := range idx {
			if len(scores[j]) != len(seqs.Tokens[i])-1 {
				return fmt.Errorf("reference log-probs: %d scores for %d tokens", len(scores[j]), len(seqs.Tokens[i])-1)
			}
			for t, v := range scores[j] {
				if seqs.Mask[i][t+1] {
					seqs.RefLogProb[i][t+1] = v
				}
			}
		}
	}
	return nil
}

// Update implements train.Learner: ppo_epochs passes over seqs in the
// shuffled mini-batches of train.MiniBatchUpdates, one optimizer step on
// the server each.
func (l *tinkerLearner) Update(ctx context.Context, seqs *train.Sequences, opts train.UpdateOptions) (train.UpdateStats, error) {
	st, err := train.MiniBatchUpdates(seqs, l.algo, opts, func(mb *train.Sequences) (map[string]float64, bool, error) {
		return l.step(ctx, mb, opts.LR)
	})
	if err != nil {
		return st, err
	}
	l.rec.Updates++
	return st, l.publish(ctx)
}

// step is one optimizer step on a mini-batch; ok is false, and the
// weights unchanged, when the loss is not finite.
func (l *tinkerLearner) step(ctx context.Context, mb *train.Sequences, lr float64) (map[string]float64, bool, error) {
	idx := trainable(mb)
	if len(idx) == 0 {
		return nil, false, nil
	}
	var in tinker.ForwardBackwardInput
	var metrics map[string]float64
	if l.loss == train.TinkerLossPPO {
		w, err := l.algo.LossWeights(mb.Mask)
		if err != nil {
			return nil, false, err
		}
		in = tinker.ForwardBackwardInput{LossFn: tinker.LossPPO,
			LossFnConfig: map[string]float64{"clip_low_threshold": 1 - l.algo.ClipLow, "clip_high_threshold": 1 + l.algo.ClipHigh}}
		for _, i := range idx {
			adv := make([]float64, len(mb.Tokens[i]))
			for t := range adv {
				if mb.Mask[i][t] {
					adv[t] = w[i][t] * mb.Advantages[i][t]
				}
			}
			in.Data = append(in.Data, datum(mb.Tokens[i], map[string][]float64{tinker.InputAdvantages: adv, tinker.InputLogprobs: mb.OldLogProb[i]}))
		}
		metrics = map[string]float64{}
	} else {
		logp, err := l.forwardLogProbs(ctx, mb, len(mb.Tokens))
		if err != nil {
			return nil, false, err
		}
		if !algos.FiniteRows(logp, mb.Mask) {
			return nil, false, nil
		}
		// The sampled tokens' surprisal: the one-sample estimate of the
		// entropy (see tinkerLearner).
		entropy := make([][]float64, len(logp))
		for i, row := range logp {
			entropy[i] = make([]float64, len(row))
			for t, v := range row {
				if mb.Mask[i][t] {
					entropy[i][t] = -v
				}
			}
		}
		r, err := l.algo.ActorLoss(algos.ActorBatch{LogProb: logp, OldLogProb: mb.OldLogProb, SamplerLogProb: mb.SamplerLogProb, RefLogProb: mb.RefLogProb,
			Advantages: mb.Advantages, Entropy: entropy, Mask: mb.Mask})
		if err != nil {
			return nil, false, fmt.Errorf("actor loss: %w", err)
		}
		if !algos.Finite(r.Loss) {
			return nil, false, nil
		}
		metrics = r.Metrics()
		in.LossFn = tinker.LossCrossEntropy
		for _, i := range idx {
			w := make([]float64, len(mb.Tokens[i]))
			for t := range w {
				if mb.Mask[i][t] {
					// ∂L/∂log π = g + (∂L/∂H)·(−log π) by the estimate;
					// cross_entropy's weights are its negative.
					w[t] = -(r.DLogProb[i][t] + r.DEntropy[i][t]*(-logp[i][t]))
				}
			}
			in.Data = append(in.Data, datum(mb.Tokens[i], map[string][]float64{tinker.InputWeights: w}))
		}
	}
	fb, err := l.model.ForwardBackwardAsync(ctx, in)
	if err != nil {
		return nil, false, err
	}
	// Submitted before the first result arrives: the server runs the two
	// in order, and the wait is one round trip instead of two.
	opt, err := l.model.OptimStepAsync(ctx, tinkerAdam(l.algo, lr))
	if err != nil {
		return nil, false, err
	}
	fbOut, err := fb.Wait(ctx)
	if err != nil {
		return nil, false, err
	}
	optOut, err := opt.Wait(ctx)
	if err != nil {
		return nil, false, err
	}
	if l.loss == train.TinkerLossPPO {
		if v, ok := serverLoss(fbOut); ok {
			metrics["actor/pg_loss"], metrics["actor/loss"] = v, v
		}
	}
	for k, v := range optOut.Metrics {
		switch k {
		case "grad_norm", "grad_norm:mean", "skyrl.ai/grad_norm":
			metrics["actor/grad_norm"] = v
		case "skyrl.ai/learning_rate":
			// MiniBatchUpdates reports actor/lr itself; a server that
			// applied another rate than it was sent is worth saying (it
			// holds float32: compare at that precision).
			if math.Abs(v-lr) > 1e-6*math.Abs(lr) && !l.lrWarned {
				l.lrWarned = true
				l.log.Warn("tinker: the server applied another learning rate than the one sent", "sent", lr, "applied", v)
			}
		case "skipped", "skipped:sum":
			if v != 0 {
				return nil, false, nil
			}
		}
	}
	return metrics, true, nil
}

// serverLoss is the loss of a forward_backward: its loss:sum metric, or,
// from an engine that reports no metrics (SkyRL-JAX), the sum of its
// per-token elementwise_loss outputs.
func serverLoss(out tinker.ForwardBackwardOutput) (float64, bool) {
	if v, ok := out.Metrics["loss:sum"]; ok {
		return v, true
	}
	var sum float64
	found := false
	for _, d := range out.LossFnOutputs {
		t, ok := d["elementwise_loss"]
		if !ok {
			return 0, false
		}
		vals, err := t.Dense()
		if err != nil {
			return 0, false
		}
		found = true
		for _, v := range vals {
			sum += v
		}
	}
	return sum, found
}
