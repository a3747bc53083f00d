package train

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/agentrl/agentrl/algos"
	"github.com/agentrl/agentrl/policy/native"
	"github.com/agentrl/agentrl/rollout"
)

// learner updates the embedded policy (and its critic, for PPO) from
// trajectories. The loss is written in algos as per-token functions with
// their derivatives; the model turns dL/dlogp, dL/dentropy and dL/dvalue
// per token into parameter gradients.
type learner struct {
	cfg       AlgoConfig
	actor     *native.Model
	actorOpt  *native.AdamW
	critic    *native.Model // nil without a critic
	criticOpt *native.AdamW
	ref       *native.Model // frozen reference; nil without KL
}

// sequences are the trained trajectories in learner form: one sequence per
// trajectory, or per turn with a history window.
type sequences struct {
	episode []int // index of the trajectory each sequence comes from
	tokens  [][]int
	mask    [][]bool
	oldLP   [][]float64 // behaviour log-probs (the policy's own at T=1)
	adv     [][]float64
	ret     [][]float64 // critic targets
	oldV    [][]float64 // critic values at rollout time
}

func newSequences(trajs []rollout.Trajectory) *sequences {
	s := &sequences{}
	for i := range trajs {
		for _, seq := range trajs[i].Sequences() {
			s.episode = append(s.episode, i)
			s.tokens = append(s.tokens, seq.Tokens)
			s.mask = append(s.mask, seq.LossMask)
			s.oldLP = append(s.oldLP, seq.LogProbs)
		}
	}
	return s
}

func (s *sequences) subset(idx []int) *sequences {
	pick := func(x [][]float64) [][]float64 {
		if x == nil {
			return nil
		}
		out := make([][]float64, len(idx))
		for i, j := range idx {
			out[i] = x[j]
		}
		return out
	}
	out := &sequences{oldLP: pick(s.oldLP), adv: pick(s.adv), ret: pick(s.ret), oldV: pick(s.oldV)}
	for _, j := range idx {
		out.tokens = append(out.tokens, s.tokens[j])
		out.mask = append(out.mask, s.mask[j])
	}
	return out
}

// forwardNoGrad runs a model without gradient and returns per-token outputs
// selected by the loss mask, in chunks of at most chunk sequences.
func forwardNoGrad(ctx context.Context, m *native.Model, s *sequences, chunk int, field func(*native.Outputs) [][]float32) ([][]float64, error) {
	out := make([][]float64, 0, len(s.tokens))
	for lo := 0; lo < len(s.tokens); lo += chunk {
		hi := min(lo+chunk, len(s.tokens))
		o, err := m.Forward(ctx, native.Batch{Tokens: s.tokens[lo:hi], Mask: s.mask[lo:hi]})
		if err != nil {
			return nil, err
		}
		out = append(out, to64(field(o))...)
	}
	return out, nil
}

func to64(x [][]float32) [][]float64 {
	out := make([][]float64, len(x))
	for i, row := range x {
		out[i] = make([]float64, len(row))
		for j, v := range row {
			out[i][j] = float64(v)
		}
	}
	return out
}

func to32(x [][]float64) [][]float32 {
	if x == nil {
		return nil
	}
	out := make([][]float32, len(x))
	for i, row := range x {
		out[i] = make([]float32, len(row))
		for j, v := range row {
			out[i][j] = float32(v)
		}
	}
	return out
}

// updateStats are the learner's per-step metrics and health.
type updateStats struct {
	metrics      map[string]float64
	skipped      int // mini-batches skipped for a non-finite loss or gradient
	miniBatches  int
	lastGradNorm float64
}

// update runs ppo_epochs passes of mini-batch updates over s. lr is this
// step's actor learning rate; criticLR the critic's.
func (l *learner) update(ctx context.Context, s *sequences, lr, criticLR float64, rng *rand.Rand) (updateStats, error) {
	st := updateStats{metrics: map[string]float64{}}
	sums := map[string]float64{}
	n := len(s.tokens)
	for epoch := 0; epoch < l.cfg.Epochs; epoch++ {
		order := rng.Perm(n)
		for lo := 0; lo < n; lo += l.cfg.MiniBatch {
			idx := order[lo:min(lo+l.cfg.MiniBatch, n)]
			mb := s.subset(idx)
			m, ok, err := l.actorStep(ctx, mb, lr)
			if err != nil {
				return st, err
			}
			st.miniBatches++
			if !ok {
				st.skipped++
				continue
			}
			st.lastGradNorm = m["actor/grad_norm"]
			if l.critic != nil {
				cm, cok, err := l.criticStep(ctx, mb, criticLR)
				if err != nil {
					return st, err
				}
				if !cok {
					st.skipped++
					continue
				}
				for k, v := range cm {
					m[k] = v
				}
			}
			for k, v := range m {
				sums[k] += v
			}
		}
	}
	if done := st.miniBatches - st.skipped; done > 0 {
		for k, v := range sums {
			st.metrics[k] = v / float64(done)
		}
	}
	st.metrics["actor/lr"] = lr
	st.metrics["actor/skipped_updates"] = float64(st.skipped)
	return st, nil
}

// finite reports whether every value is a finite number.
func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// finiteRows reports whether x is finite wherever mask is set.
func finiteRows(x [][]float64, mask [][]bool) bool {
	for i, row := range x {
		for j, v := range row {
			if mask[i][j] && !finite(v) {
				return false
			}
		}
	}
	return true
}

func (l *learner) actorStep(ctx context.Context, mb *sequences, lr float64) (map[string]float64, bool, error) {
	var ref [][]float64
	if l.ref != nil && l.cfg.UseKLLoss {
		var err error
		if ref, err = forwardNoGrad(ctx, l.ref, mb, len(mb.tokens), func(o *native.Outputs) [][]float32 { return o.LogProb }); err != nil {
			return nil, false, err
		}
	}
	out, err := l.actor.Forward(ctx, native.Batch{Tokens: mb.tokens, Mask: mb.mask})
	if err != nil {
		return nil, false, err
	}
	logp, entropy := to64(out.LogProb), to64(out.Entropy)
	if !finiteRows(logp, mb.mask) || !finiteRows(entropy, mb.mask) {
		return nil, false, nil // a diverged model: skip, the caller counts it
	}
	res, err := l.cfg.ActorLoss(algos.ActorBatch{
		LogProb: logp, OldLogProb: mb.oldLP, RefLogProb: ref, Advantages: mb.adv, Entropy: entropy, Mask: mb.mask,
	})
	if err != nil {
		return nil, false, fmt.Errorf("actor loss: %w", err)
	}
	if !finite(res.Loss) {
		return nil, false, nil
	}
	l.actor.ZeroGrad()
	if err := l.actor.Backward(ctx, native.OutputGrads{LogProb: to32(res.DLogProb), Entropy: to32(res.DEntropy)}); err != nil {
		return nil, false, err
	}
	norm := native.ClipGradNorm(l.actor, l.cfg.GradClip)
	if !finite(norm) {
		l.actor.ZeroGrad()
		return nil, false, nil
	}
	if err := l.actorOpt.Update(l.actor, float32(lr)); err != nil {
		return nil, false, err
	}
	m := res.Metrics()
	m["actor/grad_norm"] = norm
	return m, true, nil
}

func (l *learner) criticStep(ctx context.Context, mb *sequences, lr float64) (map[string]float64, bool, error) {
	out, err := l.critic.Forward(ctx, native.Batch{Tokens: mb.tokens, Mask: mb.mask})
	if err != nil {
		return nil, false, err
	}
	values := to64(out.Value)
	if !finiteRows(values, mb.mask) {
		return nil, false, nil
	}
	res, err := l.cfg.CriticLoss(values, mb.oldV, mb.ret, mb.mask)
	if err != nil {
		return nil, false, fmt.Errorf("critic loss: %w", err)
	}
	if !finite(res.Loss) {
		return nil, false, nil
	}
	l.critic.ZeroGrad()
	if err := l.critic.Backward(ctx, native.OutputGrads{Value: to32(res.DValue)}); err != nil {
		return nil, false, err
	}
	norm := native.ClipGradNorm(l.critic, l.cfg.GradClip)
	if !finite(norm) {
		l.critic.ZeroGrad()
		return nil, false, nil
	}
	if err := l.criticOpt.Update(l.critic, float32(lr)); err != nil {
		return nil, false, err
	}
	m := res.Metrics()
	m["critic/grad_norm"] = norm
	return m, true, nil
}
