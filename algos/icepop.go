package algos

// IcePop (Ling team, "Every Step Evolves: Scaling Reinforcement Learning
// for Trillion-Scale Thinking Model", the Ring-1T report, 2025): masked
// token-level importance sampling with double-sided calibration. With
// k_t = π_train(y_t; θ_old)/π_infer(y_t; θ_old), the learner's and the
// inference engine's probabilities of the sampled token under the same
// weights,
//
//	M(k; α, β) = k   if α ≤ k ≤ β,   0 otherwise
//	J_IcePop   = E[ (1/G)·Σ_i (1/|y_i|)·Σ_t M(k_{i,t}; α, β) · min(r_{i,t}·A_{i,t}, clip(r_{i,t}, 1−ε, 1+ε)·A_{i,t}) ]
//
// with α = 0.5, β = 5: a token whose probabilities disagree by more than
// that gets no gradient, the others are weighted by k. This is the mask
// mode of rollout_is.go at token level with thresholds [α, β] and no veto
// (k_t = ρ_t there); in a preset:
//
//	rollout_is: true, rollout_is_level: token, rollout_is_mode: mask,
//	rollout_is_threshold: 5, rollout_is_threshold_lower: 0.5, rollout_is_veto_threshold: 0

// IcePop's default band [α, β].
const (
	IcePopAlpha = 0.5
	IcePopBeta  = 5.0
)

// IcePop is the IcePop correction with band [α, β] = [0.5, 5].
func IcePop() RolloutCorrection { return MIS(IcePopAlpha, IcePopBeta) }
