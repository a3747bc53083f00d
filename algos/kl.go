package algos

import (
	"fmt"
	"math"
	"strings"
)

// KL to the reference policy, per token, with the estimators verl's
// kl_penalty implements (Schulman, "Approximating KL divergence", 2020).
// With d = logp − logp_ref (logp = current policy, logp_ref = reference):
//
//	k1  ("kl", "k1"):          d                                 ∂/∂logp = 1
//	abs ("abs"):               |d|                               ∂/∂logp = sign(d) (0 at d = 0)
//	k2  ("mse", "k2"):         ½·d²                              ∂/∂logp = d
//	k3  ("low_var_kl", "k3"):  clamp(e^{−d} + d − 1, −10, 10)    ∂/∂logp = 1 − e^{−d} inside, 0 when clamped
//
// k3 is written in verl as exp(ref−logp) − (ref−logp) − 1; it is ≥ 0 and an
// unbiased, low-variance estimator of KL(π‖π_ref) under samples from π.
// verl first clamps ref−logp to [−20, 20]; whenever that clamp is active the
// outer clamp at 10 is active too, so value and gradient are the same.
//
// As a loss term (use_kl_loss) the per-token KL is aggregated like the
// policy loss and added with kl_loss_coef; as a reward penalty
// (use_kl_in_reward) it is evaluated on the rollout (old) log-probs and
// subtracted from the token rewards: r_t ← r_t − β·kl_t (KLPenalizedRewards).

// KLKind names a per-token KL estimator.
type KLKind string

// The KL estimators; the string values are verl's canonical names.
const (
	KL1   KLKind = "kl"
	KLAbs KLKind = "abs"
	KL2   KLKind = "mse"
	KL3   KLKind = "low_var_kl"
)

// ParseKLKind accepts verl's names and aliases: kl, k1, abs, mse, k2,
// low_var_kl, low-var-kl, k3 (case-insensitive).
func ParseKLKind(s string) (KLKind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "kl", "k1":
		return KL1, nil
	case "abs":
		return KLAbs, nil
	case "mse", "k2":
		return KL2, nil
	case "low_var_kl", "low-var-kl", "k3":
		return KL3, nil
	}
	return "", fmt.Errorf("algos: unknown KL estimator %q (want kl|k1, abs, mse|k2, low_var_kl|k3)", s)
}

// KL returns the per-token estimate and its derivative with respect to logp.
func (k KLKind) KL(logp, refLogp float64) (value, dLogp float64, err error) {
	d := logp - refLogp
	switch k {
	case KL1:
		return d, 1, nil
	case KLAbs:
		switch {
		case d > 0:
			return d, 1, nil
		case d < 0:
			return -d, -1, nil
		}
		return 0, 0, nil
	case KL2:
		return 0.5 * d * d, d, nil
	case KL3:
		x := -d // verl's kl = ref − logp
		if x > 20 || x < -20 {
			return 10, 0, nil // inner clamp ⇒ outer clamp active
		}
		v := math.Exp(x) - x - 1
		if v > 10 {
			return 10, 0, nil
		}
		// v ≥ 0 always, so the lower clamp at −10 never binds.
		return v, 1 - math.Exp(x), nil
	}
	return 0, 0, fmt.Errorf("algos: unknown KL estimator %q", string(k))
}

// KLTokens evaluates the estimator on every in-mask token. value and dLogp
// are 0 at out-of-mask positions.
func KLTokens(k KLKind, logp, refLogp [][]float64, mask [][]bool) (value, dLogp [][]float64, err error) {
	if err := checkTokens("logp", logp, mask); err != nil {
		return nil, nil, err
	}
	if err := checkTokens("ref_logp", refLogp, mask); err != nil {
		return nil, nil, err
	}
	if _, _, err := k.KL(0, 0); err != nil {
		return nil, nil, err
	}
	value, dLogp = zerosLike(mask), zerosLike(mask)
	for i := range mask {
		for t, m := range mask[i] {
			if m {
				value[i][t], dLogp[i][t], _ = k.KL(logp[i][t], refLogp[i][t])
			}
		}
	}
	return value, dLogp, nil
}

// KLPenalizedRewards is verl's apply_kl_penalty with a fixed coefficient:
// r_t = s_t − β·kl(oldLogp_t, refLogp_t) on in-mask tokens, 0 elsewhere.
// The penalty is a reward, so no gradient flows through it.
func KLPenalizedRewards(scores, oldLogp, refLogp [][]float64, mask [][]bool, beta float64, k KLKind) ([][]float64, error) {
	if err := checkTokens("token scores", scores, mask); err != nil {
		return nil, err
	}
	if math.IsNaN(beta) || math.IsInf(beta, 0) {
		return nil, fmt.Errorf("algos: KL coefficient is %v", beta)
	}
	kl, _, err := KLTokens(k, oldLogp, refLogp, mask)
	if err != nil {
		return nil, err
	}
	out := zerosLike(mask)
	for i := range mask {
		for t, m := range mask[i] {
			if m {
				out[i][t] = scores[i][t] - beta*kl[i][t]
			}
		}
	}
	return out, nil
}
