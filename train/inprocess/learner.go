// Package inprocess is the learner that trains in this process: the
// embedded Go transformer (model/native), warm-started on an environment's
// expert demonstrations, or a Hugging Face model directory (model.init),
// every weight or LoRA adapters (model.lora). It registers as train's
// "native" learner; import it for its side effect:
//
//	import _ "github.com/agentrl/agentrl/train/inprocess"
//
// The warm start (warmstart.go) trains the embedded model's tokenizer on
// expert demonstrations and the model on them by supervised learning,
// through the same optimizer step as RL updates, and caches the result
// keyed on everything it depends on.
package inprocess

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/agentrl/agentrl/algos"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/text/tokenizer"
	"github.com/agentrl/agentrl/train"
)

func init() {
	train.RegisterLearner(train.LearnerNative, train.LearnerRegistration{
		Description: "trains the embedded Go transformer (warm-started) or a Hugging Face model in this process, in full or with LoRA adapters",
		New:         New,
	})
}

// New is the native learner's factory (a train.LearnerFactory): for a new
// run, the starting model (StartingModel) with adapters, critic and
// reference as the configuration asks; resumed, the checkpoint's state
// (with adapters, over the base model rebuilt as the run started it).
func New(ctx context.Context, start *train.Start) (train.Learner, error) {
	cfg := start.Config
	if start.ResumeFrom == "" {
		s, err := StartingModel(ctx, start)
		if err != nil {
			return nil, err
		}
		return newLearner(cfg, s)
	}
	var base *Starting
	if cfg.Model.LoRA.Enabled() {
		var err error
		if base, err = StartingModel(ctx, start); err != nil {
			return nil, err
		}
	}
	return load(cfg, start.ResumeFrom, base)
}

// Directories of a native learner's checkpoint besides the actor's files,
// which sit at the top so that the checkpoint loads as a policy on its own
// (trainer eval, trainer serve). The actor is a native checkpoint with the
// agentrl tokenizer, or, for a model that came from a Hugging Face
// directory (model.init), a Hugging Face directory again (local.WriteHF:
// float32 weights and the source's config and tokenizer files) with the
// optimizer state beside it in the native layout, so that transformers
// and vLLM load the trained model as they loaded the original. The critic
// and the reference are native checkpoints either way.
//
// A run that trains adapters (model.lora) checkpoints the adapters instead
// of the actor's weights, which stay those of the base model it started
// from: adapterDir holds them as a PEFT LoRA adapter (adapter_config.json,
// whose base_model_name_or_path is the base model's directory, and
// adapter_model.safetensors), optimizer.safetensors beside it their AdamW
// state, and baseFile identifies the base model, which a resumed run
// rebuilds as the run started (model.init, the warm start or its cache, or
// a fresh model) and checks against it. There is no reference: the KL
// reference is the base model (ForwardBase).
const (
	criticDir    = "critic"
	referenceDir = "reference"
	adapterDir   = "adapter"
	baseFile     = "base.json"
)

// loraBase identifies the frozen base model of a run that trains adapters.
type loraBase struct {
	// Dir is the base model's directory (absolute): model.init or the
	// warm-start cache; empty for a fresh model.
	Dir string `json:"dir"`
	// ParamsSHA256 is the SHA-256 of the base weights (float32,
	// little-endian, in the native layout).
	ParamsSHA256 string `json:"params_sha256"`
}

// paramsSHA256 hashes a model's weights (base weights only).
func paramsSHA256(m *native.Model) string {
	h := sha256.New()
	buf := make([]byte, 0, 1<<16)
	for _, x := range m.Params() {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
		if len(buf) == cap(buf) {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil))
}

// nativeLearner is the in-process Learner over the embedded Go
// transformer: the actor and optional critic train with AdamW, the
// reference is a frozen copy of the starting actor.
type nativeLearner struct {
	algo train.AlgoConfig
	// tok is the agentrl tokenizer, or nil for an actor from a Hugging
	// Face directory, whose files (tokenizer, chat template, config) are
	// hf.
	tok *tokenizer.Tokenizer
	hf  local.HFFiles
	pol *local.Policy

	actor     *native.Model
	actorOpt  *native.AdamW
	critic    *native.Model // nil without a critic
	criticOpt *native.AdamW
	ref       *native.Model // nil without a KL term, or with adapters
	// base is set when the actor trains adapters; refBase when the KL
	// reference is then the actor's base model.
	base    *loraBase
	refBase bool
}

var (
	_ train.Learner            = (*nativeLearner)(nil)
	_ train.AdapterSaver       = (*nativeLearner)(nil)
	_ train.GradientAnalyzer   = (*nativeLearner)(nil)
	_ train.ArithmeticReporter = (*nativeLearner)(nil)
	_ train.Snapshotter        = (*nativeLearner)(nil)
)

// newLearner starts a learner from the starting model s (warm-started,
// loaded or fresh): adapters on it with model.lora, a fresh critic when
// the estimator needs one, and a frozen copy of the actor as reference
// when a KL term needs one (with adapters, the base model itself).
func newLearner(cfg train.Config, s *Starting) (*nativeLearner, error) {
	actor := s.Model
	l := &nativeLearner{algo: cfg.Algo, tok: s.Tokenizer, hf: s.HF, actor: actor}
	if cfg.Model.LoRA.Enabled() {
		base, err := newLoRABase(actor, s.Dir)
		if err != nil {
			return nil, err
		}
		if err := actor.EnableLoRA(cfg.Model.LoRA.Native(cfg.Run.Seed)); err != nil {
			return nil, fmt.Errorf("model.lora: %w", err)
		}
		l.base, l.refBase = base, cfg.NeedsReference()
	}
	l.actorOpt = native.NewAdamW(actor, 0.9, 0.999, 1e-8, float32(cfg.Algo.WeightDecay))
	if cfg.Algo.UsesCritic() {
		cc := actor.Config()
		cc.ValueHead = true
		var err error
		if l.critic, err = native.New(cc, cfg.Run.Seed+1); err != nil {
			return nil, err
		}
		l.criticOpt = native.NewAdamW(l.critic, 0.9, 0.999, 1e-8, float32(cfg.Algo.WeightDecay))
	}
	if cfg.NeedsReference() && !l.refBase {
		l.ref = actor.Clone()
	}
	return l, l.initPolicy(cfg)
}

// newLoRABase identifies the base model of a run that trains adapters.
func newLoRABase(m *native.Model, dir string) (*loraBase, error) {
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		dir = abs
	}
	return &loraBase{Dir: dir, ParamsSHA256: paramsSHA256(m)}, nil
}

// load restores a learner from a directory Save wrote. The configuration
// decides what must be there: a critic for estimators with a value
// function, a reference for KL terms; with model.lora, the adapters, over
// base, the base model rebuilt as the run started.
func load(cfg train.Config, dir string, base *Starting) (*nativeLearner, error) {
	var l *nativeLearner
	var err error
	if cfg.Model.LoRA.Enabled() {
		l, err = loadAdapters(cfg, dir, base)
	} else {
		l, err = loadActor(cfg, dir)
	}
	if err != nil {
		return nil, err
	}
	// Weight decay is a setting of this run, not state.
	l.actorOpt.WeightDecay = float32(cfg.Algo.WeightDecay)
	if cfg.Algo.UsesCritic() {
		cck, err := native.LoadCheckpoint(filepath.Join(dir, criticDir))
		if err != nil {
			return nil, fmt.Errorf("the critic: %w", err)
		}
		if cck.Optimizer == nil {
			return nil, fmt.Errorf("%s: the critic has no optimizer state", dir)
		}
		cck.Optimizer.WeightDecay = float32(cfg.Algo.WeightDecay)
		l.critic, l.criticOpt = cck.Model, cck.Optimizer
	}
	if cfg.NeedsReference() && l.refBase {
		// The base model is the reference.
	} else if cfg.NeedsReference() {
		rck, err := native.LoadCheckpoint(filepath.Join(dir, referenceDir))
		if err != nil {
			return nil, fmt.Errorf("the KL reference policy: %w", err)
		}
		l.ref = rck.Model
	}
	return l, l.initPolicy(cfg)
}

// loadActor reads the actor, its optimizer state and its text side from
// a checkpoint in either layout.
func loadActor(cfg train.Config, dir string) (*nativeLearner, error) {
	if local.IsHFDir(dir) {
		// The context is model.max_seq again, as when the run started
		// from model.init: the directory keeps the source's
		// max_position_embeddings.
		model, files, err := local.ReadHF(dir, cfg.Model.MaxSeq)
		if err != nil {
			return nil, err
		}
		opt, err := native.LoadOptimizer(dir, model)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no optimizer state", dir)
		}
		if err != nil {
			return nil, err
		}
		return &nativeLearner{algo: cfg.Algo, hf: files, actor: model, actorOpt: opt}, nil
	}
	ck, err := native.LoadCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	if ck.Optimizer == nil {
		return nil, fmt.Errorf("%s: no optimizer state", dir)
	}
	tok, err := tokenizerFromExtra(ck.Extra)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return &nativeLearner{algo: cfg.Algo, tok: tok, actor: ck.Model, actorOpt: ck.Optimizer}, nil
}

// loadAdapters restores the actor of a run that trains adapters: the base
// model ws, checked against the checkpoint's record of it, with the
// adapters and their optimizer state of the checkpoint.
func loadAdapters(cfg train.Config, dir string, ws *Starting) (*nativeLearner, error) {
	if exists(filepath.Join(dir, native.WeightsFile)) || local.IsHFDir(dir) {
		return nil, fmt.Errorf("%s: the checkpoint holds a model trained in full, not adapters (model.lora.rank is %d here)", dir, cfg.Model.LoRA.Rank)
	}
	raw, err := os.ReadFile(filepath.Join(dir, baseFile))
	if err != nil {
		return nil, fmt.Errorf("%s: the base model's record: %w", dir, err)
	}
	var rec loraBase
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", dir, baseFile, err)
	}
	actor := ws.Model
	if got := paramsSHA256(actor); got != rec.ParamsSHA256 {
		return nil, fmt.Errorf("%s: the base model (%s) is not the one the adapters were trained on "+
			"(its weights' SHA-256 is %.12s…, the checkpoint's %.12s…): model.init, or the warm start, changed", dir, ws.Dir, got, rec.ParamsSHA256)
	}
	base, err := newLoRABase(actor, ws.Dir)
	if err != nil {
		return nil, err
	}
	if err := actor.EnableLoRA(cfg.Model.LoRA.Native(cfg.Run.Seed)); err != nil {
		return nil, fmt.Errorf("model.lora: %w", err)
	}
	// LoadPEFT requires the checkpoint's adapters to be model.lora's.
	if err := native.LoadPEFT(filepath.Join(dir, adapterDir), actor); err != nil {
		return nil, err
	}
	opt, err := native.LoadOptimizer(dir, actor)
	if err != nil {
		return nil, fmt.Errorf("%s: the adapters' optimizer state: %w", dir, err)
	}
	return &nativeLearner{algo: cfg.Algo, tok: ws.Tokenizer, hf: ws.HF, actor: actor, actorOpt: opt,
		base: base, refBase: cfg.NeedsReference()}, nil
}

func (l *nativeLearner) initPolicy(cfg train.Config) error {
	var err error
	if l.hf != nil {
		l.pol, err = local.NewHF(cfg.Env.Name, l.actor, l.hf)
	} else {
		l.pol, err = local.New(cfg.Env.Name, l.actor, l.tok)
	}
	return err
}

// tokenizerBytes is what identifies the actor's tokenizer: the agentrl
// tokenizer's file, or the Hugging Face tokenizer.json.
func (l *nativeLearner) tokenizerBytes() ([]byte, error) {
	if l.hf != nil {
		return l.hf[local.TokenizerFile], nil
	}
	return tokenizerJSON(l.tok)
}

// Policy implements train.Learner: the actor, in process.
func (l *nativeLearner) Policy() policy.Policy { return l.pol }

// Snapshot implements train.Snapshotter: the actor's current weights
// copied into a policy of their own, with the actor's text side.
func (l *nativeLearner) Snapshot(context.Context) (policy.Policy, error) {
	m := l.pol.Lock()
	c := m.Clone()
	l.pol.Unlock()
	if l.hf != nil {
		return local.NewHF(l.pol.Info().Name, c, l.hf)
	}
	return local.New(l.pol.Info().Name, c, l.tok)
}

// ArithmeticID implements train.ArithmeticReporter: native.ArithmeticID,
// or empty if its probe failed.
func (l *nativeLearner) ArithmeticID() string {
	id, _ := native.ArithmeticID()
	return id
}

// Model implements train.Learner.
func (l *nativeLearner) Model() train.ModelInfo {
	info := train.ModelInfo{Kind: train.LearnerNative, Params: l.actor.NumParams()}
	if lo := l.actor.LoRA(); lo != nil {
		c := lo.Config()
		info.LoRA = &train.LoRAInfo{Rank: c.Rank, Alpha: c.Alpha, Targets: c.Targets, TrainableParams: lo.NumParams()}
	}
	if raw, err := json.Marshal(l.actor.Config()); err == nil {
		json.Unmarshal(raw, &info.Config)
	}
	if tj, err := l.tokenizerBytes(); err == nil {
		sum := sha256.Sum256(tj)
		info.TokenizerSHA256 = hex.EncodeToString(sum[:])
	}
	return info
}

// Save implements train.Learner.
func (l *nativeLearner) Save(_ context.Context, dir string) error {
	switch {
	case l.base != nil:
		if err := native.SavePEFT(filepath.Join(dir, adapterDir), l.actor, l.base.Dir); err != nil {
			return err
		}
		if err := native.WriteOptimizer(dir, l.actor, l.actorOpt); err != nil {
			return err
		}
		rec, err := json.MarshalIndent(l.base, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, baseFile), append(rec, '\n'), 0o644); err != nil {
			return err
		}
	case l.hf != nil:
		if err := local.WriteHF(dir, l.actor, l.hf); err != nil {
			return err
		}
		if err := native.WriteOptimizer(dir, l.actor, l.actorOpt); err != nil {
			return err
		}
	default:
		tok, err := tokenizerJSON(l.tok)
		if err != nil {
			return err
		}
		if err := native.WriteCheckpoint(dir, l.actor, l.actorOpt, map[string][]byte{tokenizerFile: tok}); err != nil {
			return err
		}
	}
	if l.critic != nil {
		if err := native.WriteCheckpoint(filepath.Join(dir, criticDir), l.critic, l.criticOpt, nil); err != nil {
			return fmt.Errorf("the critic: %w", err)
		}
	}
	if l.ref != nil {
		if err := native.WriteCheckpoint(filepath.Join(dir, referenceDir), l.ref, nil, nil); err != nil {
			return fmt.Errorf("the reference: %w", err)
		}
	}
	return nil
}

// SaveAdapter implements train.AdapterSaver: the adapters as the
// checkpoint's adapter/ holds them (float32).
func (l *nativeLearner) SaveAdapter(_ context.Context, dir string) error {
	if l.base == nil {
		return errors.New("the learner trains no LoRA adapters (model.lora.rank is 0)")
	}
	return native.SavePEFT(dir, l.actor, l.base.Dir)
}

// Prepare implements train.Learner.
func (l *nativeLearner) Prepare(ctx context.Context, seqs *train.Sequences) error {
	seqs.OldValues, seqs.RefLogProb = nil, nil
	var err error
	if l.algo.RecomputeOldLogProb {
		if seqs.SamplerLogProb == nil {
			seqs.SamplerLogProb = seqs.OldLogProb
		}
		recomputed, err := forwardNoGrad(ctx, l.actor, seqs, l.algo.MiniBatch, func(o *native.Outputs) [][]float32 { return o.LogProb })
		if err != nil {
			return fmt.Errorf("recomputing the old log-probs: %w", err)
		}
		for i, row := range recomputed {
			for t := range row {
				if !seqs.Mask[i][t] {
					row[t] = 0
				}
			}
		}
		seqs.OldLogProb = recomputed
	}
	if l.critic != nil {
		if seqs.OldValues, err = forwardNoGrad(ctx, l.critic, seqs, l.algo.MiniBatch, func(o *native.Outputs) [][]float32 { return o.Value }); err != nil {
			return fmt.Errorf("critic values: %w", err)
		}
	}
	switch {
	case l.refBase:
		if seqs.RefLogProb, err = forwardNoGradWith(ctx, l.actor.ForwardBase, seqs, l.algo.MiniBatch, func(o *native.Outputs) [][]float32 { return o.LogProb }); err != nil {
			return fmt.Errorf("reference log-probs: %w", err)
		}
	case l.ref != nil:
		if seqs.RefLogProb, err = forwardNoGrad(ctx, l.ref, seqs, l.algo.MiniBatch, func(o *native.Outputs) [][]float32 { return o.LogProb }); err != nil {
			return fmt.Errorf("reference log-probs: %w", err)
		}
	}
	return nil
}

// Update implements train.Learner: ppo_epochs passes over seqs in
// shuffled mini-batches (train.MiniBatchUpdates); each mini-batch updates
// the actor, then the critic.
func (l *nativeLearner) Update(ctx context.Context, seqs *train.Sequences, opts train.UpdateOptions) (train.UpdateStats, error) {
	return train.MiniBatchUpdates(seqs, l.algo, opts, func(mb *train.Sequences) (map[string]float64, bool, error) {
		m, ok, err := nativeStep(ctx, l.actor, l.actorOpt, mb, l.algo.GradClip, opts.LR, "actor", l.actorLoss(mb))
		if err != nil || !ok || l.critic == nil {
			return m, ok, err
		}
		cm, ok, err := nativeStep(ctx, l.critic, l.criticOpt, mb, l.algo.GradClip, opts.CriticLR, "critic", l.criticLoss(mb))
		for k, v := range cm {
			m[k] = v
		}
		return m, ok, err
	})
}

// GradientNorms implements train.GradientAnalyzer. The log-probs and entropies
// come from a forward pass without gradient over all of seqs, so the loss
// weights are those of one batch; each term is then back-propagated chunk
// by chunk (a forward pass each) and its norm read. The gradient is
// cleared after.
func (l *nativeLearner) GradientNorms(ctx context.Context, seqs *train.Sequences) (train.GradNorms, error) {
	n, chunk := seqs.Len(), l.algo.MiniBatch
	var logp, entropy [][]float64
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		o, err := l.actor.Forward(ctx, native.Batch{Tokens: seqs.Tokens[lo:hi], Mask: seqs.Mask[lo:hi]})
		if err != nil {
			return train.GradNorms{}, err
		}
		logp = append(logp, native.Float64s(o.LogProb)...)
		entropy = append(entropy, native.Float64s(o.Entropy)...)
	}
	parts, err := l.algo.ActorGradParts(algos.ActorBatch{LogProb: logp, OldLogProb: seqs.OldLogProb, SamplerLogProb: seqs.SamplerLogProb, RefLogProb: seqs.RefLogProb,
		Advantages: seqs.Advantages, Entropy: entropy, Mask: seqs.Mask})
	if err != nil {
		return train.GradNorms{}, err
	}
	zeros := make([][]float64, n)
	for i := range zeros {
		zeros[i] = make([]float64, len(seqs.Mask[i]))
	}
	norm := func(dLogProb, dEntropy [][]float64) (float64, error) {
		if allZero(dLogProb) && allZero(dEntropy) {
			return 0, nil
		}
		l.actor.ZeroGrad()
		for lo := 0; lo < n; lo += chunk {
			hi := min(lo+chunk, n)
			if _, err := l.actor.Forward(ctx, native.Batch{Tokens: seqs.Tokens[lo:hi], Mask: seqs.Mask[lo:hi]}); err != nil {
				return 0, err
			}
			if err := l.actor.Backward(ctx, native.OutputGrads{LogProb: native.Float32s(dLogProb[lo:hi]), Entropy: native.Float32s(dEntropy[lo:hi])}); err != nil {
				return 0, err
			}
		}
		return native.ClipGradNorm(l.actor, 0), nil
	}
	defer l.actor.ZeroGrad()
	var g train.GradNorms
	if g.Task, err = norm(parts.Task, zeros); err != nil {
		return train.GradNorms{}, err
	}
	if g.Entropy, err = norm(zeros, parts.Entropy); err != nil {
		return train.GradNorms{}, err
	}
	if g.KL, err = norm(parts.KL, zeros); err != nil {
		return train.GradNorms{}, err
	}
	return g, nil
}

func allZero(x [][]float64) bool {
	for _, row := range x {
		for _, v := range row {
			if v != 0 {
				return false
			}
		}
	}
	return true
}

// errNonFinite marks a mini-batch whose loss inputs or loss are not finite:
// a diverged model, whose update is skipped.
var errNonFinite = errors.New("non-finite loss")

// lossFunc turns a forward pass into the loss's per-output gradients, its
// value and its metrics, or errNonFinite for a diverged model.
type lossFunc func(out *native.Outputs) (native.OutputGrads, float64, map[string]float64, error)

func (l *nativeLearner) actorLoss(mb *train.Sequences) lossFunc {
	return func(out *native.Outputs) (native.OutputGrads, float64, map[string]float64, error) {
		logp, entropy := native.Float64s(out.LogProb), native.Float64s(out.Entropy)
		if !algos.FiniteRows(logp, mb.Mask) || !algos.FiniteRows(entropy, mb.Mask) {
			return native.OutputGrads{}, 0, nil, errNonFinite
		}
		r, err := l.algo.ActorLoss(algos.ActorBatch{LogProb: logp, OldLogProb: mb.OldLogProb, SamplerLogProb: mb.SamplerLogProb, RefLogProb: mb.RefLogProb,
			Advantages: mb.Advantages, Entropy: entropy, Mask: mb.Mask})
		if err != nil {
			return native.OutputGrads{}, 0, nil, fmt.Errorf("actor loss: %w", err)
		}
		return native.OutputGrads{LogProb: native.Float32s(r.DLogProb), Entropy: native.Float32s(r.DEntropy)}, r.Loss, r.Metrics(), nil
	}
}

func (l *nativeLearner) criticLoss(mb *train.Sequences) lossFunc {
	return func(out *native.Outputs) (native.OutputGrads, float64, map[string]float64, error) {
		values := native.Float64s(out.Value)
		if !algos.FiniteRows(values, mb.Mask) {
			return native.OutputGrads{}, 0, nil, errNonFinite
		}
		r, err := l.algo.CriticLoss(values, mb.OldValues, mb.Returns, mb.Mask)
		if err != nil {
			return native.OutputGrads{}, 0, nil, fmt.Errorf("critic loss: %w", err)
		}
		return native.OutputGrads{Value: native.Float32s(r.DValue)}, r.Loss, r.Metrics(), nil
	}
}

// sftLoss is the warm start's supervised loss (algos.SFTLoss, token-mean).
func sftLoss(mb *train.Sequences) lossFunc {
	return func(out *native.Outputs) (native.OutputGrads, float64, map[string]float64, error) {
		logp := native.Float64s(out.LogProb)
		if !algos.FiniteRows(logp, mb.Mask) {
			return native.OutputGrads{}, 0, nil, errNonFinite
		}
		r, err := algos.SFTLoss(algos.TokenMean, logp, mb.Mask)
		if err != nil {
			return native.OutputGrads{}, 0, nil, err
		}
		return native.OutputGrads{LogProb: native.Float32s(r.DLogProb)}, r.Loss, r.Metrics(), nil
	}
}

// nativeStep is one optimizer step of a native model on a mini-batch, the
// same for the actor, the critic and the warm start: forward, the loss and
// its per-token gradients, backward, global-norm clipping (clip ≤ 0: none),
// AdamW at lr. ok is false, and the weights are unchanged, when the loss or
// the gradient norm is not finite. The metrics gain <name>/grad_norm.
func nativeStep(ctx context.Context, m *native.Model, opt *native.AdamW, mb *train.Sequences, clip, lr float64, name string, loss lossFunc) (map[string]float64, bool, error) {
	out, err := m.Forward(ctx, native.Batch{Tokens: mb.Tokens, Mask: mb.Mask})
	if err != nil {
		return nil, false, err
	}
	grads, value, metrics, err := loss(out)
	if errors.Is(err, errNonFinite) || (err == nil && !algos.Finite(value)) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	m.ZeroGrad()
	if err := m.Backward(ctx, grads); err != nil {
		return nil, false, err
	}
	norm := native.ClipGradNorm(m, clip)
	if !algos.Finite(norm) {
		m.ZeroGrad()
		return nil, false, nil
	}
	if err := opt.Update(m, float32(lr)); err != nil {
		return nil, false, err
	}
	metrics[name+"/grad_norm"] = norm
	return metrics, true, nil
}

// forwardNoGrad runs a model without gradient and returns one per-token
// output, in chunks of at most chunk sequences.
func forwardNoGrad(ctx context.Context, m *native.Model, s *train.Sequences, chunk int, field func(*native.Outputs) [][]float32) ([][]float64, error) {
	return forwardNoGradWith(ctx, m.Forward, s, chunk, field)
}

// forwardNoGradWith is forwardNoGrad through forward (Model.Forward or
// Model.ForwardBase).
func forwardNoGradWith(ctx context.Context, forward func(context.Context, native.Batch) (*native.Outputs, error), s *train.Sequences, chunk int, field func(*native.Outputs) [][]float32) ([][]float64, error) {
	out := make([][]float64, 0, s.Len())
	for lo := 0; lo < s.Len(); lo += chunk {
		hi := min(lo+chunk, s.Len())
		o, err := forward(ctx, native.Batch{Tokens: s.Tokens[lo:hi], Mask: s.Mask[lo:hi]})
		if err != nil {
			return nil, err
		}
		out = append(out, native.Float64s(field(o))...)
	}
	return out, nil
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}
