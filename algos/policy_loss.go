package algos

import "fmt"

// The policy-gradient term of the actor objective, chosen by the preset's
// policy_loss, with the rollout importance weights ω (rollout_is.go; 1
// when off) folded into the aggregation weights w:
//
//	L_pg = Σ_{i,t} w_{i,t}·ω_{i,t}·ℓ_{i,t}
//
//	ppo         ℓ = PPO's clipped surrogate with dual clip (ppo.go)
//	gspo        ℓ = GSPO's sequence-ratio surrogate (gspo.go)
//	gspo_token  GSPO-token: the same ℓ, each token's gradient through its own log-prob
//	cispo       ℓ = −sg(clip(r))·A·logp (cispo.go)
//
// All read the same clip_ratio_low/high (verl's actor clip_ratio_*); only
// ppo applies clip_ratio_c.

// PolicyLoss names a policy loss (verl's policy_loss.loss_mode, with
// "ppo" for its "vanilla").
type PolicyLoss string

// The policy losses.
const (
	PolicyLossPPO       PolicyLoss = "ppo"
	PolicyLossGSPO      PolicyLoss = "gspo"
	PolicyLossGSPOToken PolicyLoss = "gspo_token"
	PolicyLossCISPO     PolicyLoss = "cispo"
)

// ParsePolicyLoss checks a policy loss name; "" is ppo.
func ParsePolicyLoss(s string) (PolicyLoss, error) {
	switch l := PolicyLoss(s); l {
	case "":
		return PolicyLossPPO, nil
	case PolicyLossPPO, PolicyLossGSPO, PolicyLossGSPOToken, PolicyLossCISPO:
		return l, nil
	}
	return "", fmt.Errorf("algos: unknown policy_loss %q (want ppo, gspo, gspo_token or cispo)", s)
}

// pgTerm is the policy-gradient term on a batch.
type pgTerm struct {
	Loss          [][]float64 // per-token ℓ, not yet aggregated
	DLoss         [][]float64 // ∂(Σ w·ω·ℓ)/∂logp
	ClipFrac      float64
	ClipFracLower float64
	ApproxKL      float64
}

// policyTerm evaluates the preset's policy loss with per-token weights w
// (aggregation times importance weights).
func (p Preset) policyTerm(b ActorBatch, w [][]float64) (pgTerm, error) {
	loss, err := ParsePolicyLoss(string(p.PolicyLoss))
	if err != nil {
		return pgTerm{}, err
	}
	if loss == PolicyLossGSPO || loss == PolicyLossGSPOToken {
		g := GSPO{ClipLow: p.ClipLow, ClipHigh: p.ClipHigh, Token: loss == PolicyLossGSPOToken}
		r, err := g.Loss(b.LogProb, b.OldLogProb, b.Advantages, w, b.Mask)
		if err != nil {
			return pgTerm{}, err
		}
		return pgTerm{Loss: r.Loss, DLoss: r.DLoss, ClipFrac: r.ClipFrac, ApproxKL: r.ApproxKL}, nil
	}
	var r PPOResult
	if loss == PolicyLossCISPO {
		r, err = CISPOLoss(CISPO{ClipLow: p.ClipLow, ClipHigh: p.ClipHigh}, b.LogProb, b.OldLogProb, b.Advantages, b.Mask)
	} else {
		r, err = PPOLoss(p.Clip(), b.LogProb, b.OldLogProb, b.Advantages, b.Mask)
	}
	if err != nil {
		return pgTerm{}, err
	}
	// Token-local losses: the gradient of Σ w·ℓ is w·∂ℓ/∂logp.
	d := zerosLike(b.Mask)
	for i := range w {
		for t := range w[i] {
			d[i][t] = w[i][t] * r.DLogp[i][t]
		}
	}
	return pgTerm{Loss: r.Loss, DLoss: d, ClipFrac: r.ClipFrac, ClipFracLower: r.ClipFracLower, ApproxKL: r.ApproxKL}, nil
}
