package algos

import "fmt"

// The learner's objective, as verl's actor and critic assemble it. With w the
// aggregation weights of the preset's loss_agg_mode (AggWeights) and ω the
// rollout importance weights (rollout_is.go; 1 unless rollout_is is on):
//
//	L_actor  = Σ w·ω·ℓ_pg  −  c_H·Σ w·H  +  [use_kl_loss] c_KL·Σ w·kl(logp, logp_ref)
//	L_critic = Σ w·ℓ_v                                  (ℓ_v already holds the ½)
//
// ℓ_pg is the preset's policy_loss (policy_loss.go: PPO, GSPO, CISPO), and
// the per-token gradients the learner back-propagates are
//
//	∂L_actor/∂logp_t = ∂(Σ w·ω·ℓ_pg)/∂logp_t + [use_kl_loss] c_KL·w_t·∂kl/∂logp_t
//	∂L_actor/∂H_t    = −c_H·w_t
//	∂L_critic/∂v_t   = w_t·∂ℓ_v/∂v_t
//
// where the first term is w_t·ω_t·∂ℓ_pg,t/∂logp_t for the token-local
// losses (PPO, CISPO, GSPO-token) and spreads over the sequence for GSPO.

// ActorBatch is the per-token input of the policy loss; all matrices share
// Mask's ragged shape.
type ActorBatch struct {
	LogProb    [][]float64 // log π_θ(a_t|s_t) under the parameters being trained
	OldLogProb [][]float64 // log-probs at rollout time (π_old)
	RefLogProb [][]float64 // reference policy; read only when the KL loss is on
	Advantages [][]float64
	Entropy    [][]float64 // per-token entropy of π_θ; read only when EntropyCoeff ≠ 0 (may be nil otherwise)
	Mask       [][]bool    // true = token is trained (assistant token)
	// SamplerLogProb are the log-probs the sampler reported (π_sampler)
	// when OldLogProb is the learner's recompute; read only when
	// rollout_is is on. Nil means no correction (every weight 1): without
	// a recompute OldLogProb is the sampler's, and the ratio is 1.
	SamplerLogProb [][]float64
}

// ActorLossResult is the policy objective and its per-token gradients.
type ActorLossResult struct {
	Loss     float64     // L_actor
	DLogProb [][]float64 // ∂L_actor/∂logp_t
	DEntropy [][]float64 // ∂L_actor/∂H_t

	PGLoss          float64 // Σ w·ℓ_pg
	PGClipFrac      float64
	PGClipFracLower float64
	PPOKL           float64
	Entropy         float64 // Σ w·H (0 when not computed)
	KLLoss          float64 // Σ w·kl (0 when the KL loss is off)

	// RolloutIS holds the importance weights and their statistics when
	// rollout_is is on and the batch has SamplerLogProb (nil otherwise).
	RolloutIS *RolloutISResult
}

// Metrics returns verl's actor metric names, and the rollout importance
// weights' mismatch/rollout_is_* when they were applied.
func (r ActorLossResult) Metrics() map[string]float64 {
	m := map[string]float64{
		"actor/loss":              r.Loss,
		"actor/pg_loss":           r.PGLoss,
		"actor/pg_clipfrac":       r.PGClipFrac,
		"actor/pg_clipfrac_lower": r.PGClipFracLower,
		"actor/ppo_kl":            r.PPOKL,
		"actor/entropy":           r.Entropy,
		"actor/kl_loss":           r.KLLoss,
	}
	if r.RolloutIS != nil {
		for k, v := range r.RolloutIS.Metrics() {
			m[k] = v
		}
	}
	return m
}

// aggWeights are the loss weights of the mini-batch mask: the mode's, or
// with MicroBatchWeighting RAGEN's effective ones (see agg.go).
func (p Preset) aggWeights(mask [][]bool) ([][]float64, error) {
	if p.MicroBatchWeighting {
		return MicroBatchWeights(p.LossAgg, mask)
	}
	return AggWeights(p.LossAgg, mask)
}

// LossWeights returns the per-token weights with which the preset
// aggregates a mini-batch's token losses (loss_agg_mode, and RAGEN's
// micro-batch weighting when set): the loss is Σ w·ℓ.
func (p Preset) LossWeights(mask [][]bool) ([][]float64, error) { return p.aggWeights(mask) }

// ActorLoss computes the policy objective of the preset on a batch.
func (p Preset) ActorLoss(b ActorBatch) (ActorLossResult, error) {
	r, parts, err := p.actorTerms(b)
	if err != nil {
		return ActorLossResult{}, err
	}
	r.DLogProb, r.DEntropy = parts.Task, parts.Entropy
	for i := range parts.KL {
		for t := range parts.KL[i] {
			r.DLogProb[i][t] += parts.KL[i][t]
		}
	}
	return r, nil
}

// ActorGradParts are the terms of the actor's per-token gradient apart:
// g_total = g_task + g_reg, with the regularisers' g_reg from the entropy
// bonus (through the entropy) and the KL loss (through the log-probs).
// RAGEN-2's gradient analysis compares their norms across reward-variance
// buckets. A term that is off is all zeros.
type ActorGradParts struct {
	Task    [][]float64 // ∂(Σ w·ω·ℓ_pg)/∂logp
	KL      [][]float64 // [use_kl_loss] c_KL·w·∂kl/∂logp
	Entropy [][]float64 // −c_H·w, the gradient with respect to the entropies
}

// ActorGradParts returns the actor gradient's terms on a batch (their
// sum is ActorLoss's DLogProb and DEntropy).
func (p Preset) ActorGradParts(b ActorBatch) (ActorGradParts, error) {
	_, parts, err := p.actorTerms(b)
	return parts, err
}

// actorTerms is the policy objective with its gradient kept in terms.
func (p Preset) actorTerms(b ActorBatch) (ActorLossResult, ActorGradParts, error) {
	var parts ActorGradParts
	if err := p.Validate(); err != nil {
		return ActorLossResult{}, parts, err
	}
	w, err := p.aggWeights(b.Mask)
	if err != nil {
		return ActorLossResult{}, parts, err
	}
	// The policy term's weights: w, times ω when the correction applies.
	wPG := w
	var is *RolloutISResult
	if p.RolloutIS && b.SamplerLogProb != nil {
		res, err := RolloutISWeights(p.Correction(), b.OldLogProb, b.SamplerLogProb, b.Mask)
		if err != nil {
			return ActorLossResult{}, parts, fmt.Errorf("rollout_is: %w", err)
		}
		is = &res
		wPG = zerosLike(b.Mask)
		for i := range w {
			for t := range w[i] {
				wPG[i][t] = w[i][t] * res.Weights[i][t]
			}
		}
	}
	pg, err := p.policyTerm(b, wPG)
	if err != nil {
		return ActorLossResult{}, parts, err
	}
	parts = ActorGradParts{Task: pg.DLoss, KL: zerosLike(b.Mask), Entropy: zerosLike(b.Mask)}
	r := ActorLossResult{
		PGClipFrac:      pg.ClipFrac,
		PGClipFracLower: pg.ClipFracLower,
		PPOKL:           pg.ApproxKL,
		RolloutIS:       is,
	}
	r.PGLoss, _ = Aggregate(pg.Loss, wPG)
	r.Loss = r.PGLoss
	if p.EntropyCoeff != 0 {
		if err := checkTokens("entropy", b.Entropy, b.Mask); err != nil {
			return ActorLossResult{}, parts, err
		}
		lossH, aggH, dH, err := EntropyBonus(p.EntropyCoeff, b.Entropy, w)
		if err != nil {
			return ActorLossResult{}, parts, err
		}
		r.Loss += lossH
		r.Entropy = aggH
		parts.Entropy = dH
	}
	if p.UseKLLoss {
		kl, dkl, err := KLTokens(p.KLLossType, b.LogProb, b.RefLogProb, b.Mask)
		if err != nil {
			return ActorLossResult{}, parts, fmt.Errorf("KL loss: %w", err)
		}
		r.KLLoss, _ = Aggregate(kl, w)
		r.Loss += p.KLLossCoef * r.KLLoss
		for i := range w {
			for t := range w[i] {
				parts.KL[i][t] = p.KLLossCoef * w[i][t] * dkl[i][t]
			}
		}
	}
	return r, parts, nil
}

// CriticLossResult is the value objective and its per-token gradient.
type CriticLossResult struct {
	Loss       float64     // L_critic (verl critic/vf_loss)
	DValue     [][]float64 // ∂L_critic/∂v_t
	VFClipFrac float64     // critic/vf_clipfrac
}

// Metrics returns verl's critic metric names.
func (r CriticLossResult) Metrics() map[string]float64 {
	return map[string]float64{"critic/vf_loss": r.Loss, "critic/vf_clipfrac": r.VFClipFrac}
}

// CriticLoss computes the clipped value objective of the preset on a batch:
// values are the current predictions, oldValues those at rollout time.
func (p Preset) CriticLoss(values, oldValues, returns [][]float64, mask [][]bool) (CriticLossResult, error) {
	if err := p.Validate(); err != nil {
		return CriticLossResult{}, err
	}
	w, err := p.aggWeights(mask)
	if err != nil {
		return CriticLossResult{}, err
	}
	v, err := ValueLoss(values, oldValues, returns, mask, p.ClipRangeValue)
	if err != nil {
		return CriticLossResult{}, err
	}
	r := CriticLossResult{DValue: zerosLike(mask), VFClipFrac: v.ClipFrac}
	r.Loss, _ = Aggregate(v.Loss, w)
	for i := range w {
		for t := range w[i] {
			r.DValue[i][t] = w[i][t] * v.DValue[i][t]
		}
	}
	return r, nil
}

// AdvantageInput is what the preset's estimator needs; all token matrices
// share Mask's shape (one row per sequence).
type AdvantageInput struct {
	// Scores are the episode scores; used when TokenRewards is nil (placed on
	// the last in-mask token by OutcomeRewards).
	Scores []float64
	// Episode, when set, maps each sequence to its episode: a history
	// window trains every turn of an episode as a sequence of its own.
	// Scores and Groups then index episodes, not sequences (see
	// episodes.go for how each estimator treats them).
	Episode []int
	// TokenRewards are per-token rewards (e.g. per-turn scores); optional.
	TokenRewards [][]float64
	// Groups are the episode groups (GRPO, RLOO).
	Groups Groups
	// Turns describe every episode's turns (turns.go): the turn-level
	// credit methods and bi-level GAE read them; nil otherwise.
	Turns [][]Turn
	// Values are the critic's values at rollout time (GAE).
	Values [][]float64
	// OldLogProb and RefLogProb are read when the KL penalty in reward is on.
	OldLogProb, RefLogProb [][]float64
	Mask                   [][]bool
}

// Advantages runs the preset's estimator: the optional KL penalty in reward
// (KLPenalizedRewards), then GAE, REINFORCE++, or a group estimator on the
// per-episode sums of the token rewards, broadcast to the in-mask tokens.
// Returns are the GAE / REINFORCE++ returns; for group estimators they equal
// the advantages (as verl sets them).
func (p Preset) Advantages(in AdvantageInput) (advantages, returns [][]float64, err error) {
	advantages, returns, _, err = p.AdvantagesWithMetrics(in)
	return advantages, returns, err
}

// AdvantagesWithMetrics is Advantages that also returns the turn-level
// credit statistics (credit/… metrics; nil without turn-level credit).
func (p Preset) AdvantagesWithMetrics(in AdvantageInput) (advantages, returns [][]float64, metrics map[string]float64, err error) {
	if err := p.Validate(); err != nil {
		return nil, nil, nil, err
	}
	if p.UsesTurns() && in.Turns == nil {
		return nil, nil, nil, fmt.Errorf("algos: credit %q / bi_level_gae %v needs the episodes' turns", string(p.Credit), p.BiLevelGAE)
	}
	if p.BiLevelGAE {
		if in.TokenRewards != nil {
			return nil, nil, nil, fmt.Errorf("algos: bi_level_gae uses the turns' rewards, not per-token rewards")
		}
		if err := validateTurns(in.Turns, len(in.Scores), in.Mask, in.Episode); err != nil {
			return nil, nil, nil, err
		}
		advantages, returns, err = BiLevelGAE(in.Values, in.Mask, in.Turns, p.Gamma, p.Lambda, p.HighLevelGamma)
		return advantages, returns, nil, err
	}
	if p.Credit == CreditGiGPO || p.Credit == CreditSolver {
		advantages, metrics, err = p.turnCreditAdvantages(in)
		return advantages, advantages, metrics, err
	}
	advantages, returns, err = p.outcomeAdvantages(in)
	return advantages, returns, nil, err
}

// outcomeAdvantages is Advantages without turn-level credit.
func (p Preset) outcomeAdvantages(in AdvantageInput) (advantages, returns [][]float64, err error) {
	if in.Episode != nil {
		if !p.UsesTokenEstimator() {
			return p.episodeGroupAdvantages(in)
		}
		if in.Scores, err = sequenceScores(in.Scores, in.Episode); err != nil {
			return nil, nil, err
		}
	}
	rewards := in.TokenRewards
	if rewards == nil {
		if rewards, err = OutcomeRewards(in.Scores, in.Mask); err != nil {
			return nil, nil, err
		}
	}
	if p.UseKLInReward {
		if rewards, err = KLPenalizedRewards(rewards, in.OldLogProb, in.RefLogProb, in.Mask, p.KLRewardCoef, p.KLPenalty); err != nil {
			return nil, nil, err
		}
	}
	switch p.Estimator {
	case EstimatorGAE:
		return GAE(rewards, in.Values, in.Mask, p.Gamma, p.Lambda)
	case EstimatorReinforcePP:
		return ReinforcePlusPlus(rewards, in.Mask, p.Gamma)
	}
	if err := checkTokens("rewards", rewards, in.Mask); err != nil {
		return nil, nil, err
	}
	scores := make([]float64, len(in.Mask))
	for i := range in.Mask {
		for t, m := range in.Mask[i] {
			if m {
				scores[i] += rewards[i][t]
			}
		}
	}
	seq, err := p.groupAdvantages(scores, in.Groups)
	if err != nil {
		return nil, nil, err
	}
	adv, err := BroadcastToTokens(seq, in.Mask)
	if err != nil {
		return nil, nil, err
	}
	return adv, adv, nil
}
