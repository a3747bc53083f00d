package algos

import (
	"fmt"
	"math"
	"strings"
)

// Presets: the four algorithms of the RAGEN-2 main table
// (scripts/runs/run_main_table_diff_algo.sh on top of config/base.yaml):
//
//	PPO     gae,  token-mean
//	DAPO    gae,  token-mean, clip 0.2/0.28, no KL in loss or reward (not dynamic sampling)
//	GRPO    grpo, std-normalised,  seq-mean-token-mean
//	DrGRPO  grpo, no std,          seq-mean-token-sum
//
// Shared defaults (base.yaml and the script's common overrides): γ = λ = 1,
// clip_ratio_low/high = 0.2/0.28, dual-clip c = 3, entropy_coeff = 0.001,
// use_kl_loss = false (kl_loss_type low_var_kl and kl_loss_coef 0.001 set but
// inactive; DAPO sets the coefficient to 0), no KL in reward, value clip 0.5.
// Because base.yaml already has clip-higher and no KL, PPO and DAPO resolve
// to the same effective settings; they differ only in the (inactive)
// kl_loss_coef.
//
// Turn-level credit presets (credit.go), on the same shared defaults:
//
//	GiGPO       GRPO + GiGPO step advantage from anchor states, ω = 1, γ = 0.95
//	CAST        GRPO + solver cost-to-go credit, α = 0.1, asinh
//	BiLevelPPO  PPO with RAGEN's bi-level GAE, high_level_gamma 0.95
//
// Policy-loss presets (policy_loss.go), GRPO with another surrogate:
//
//	GSPO   sequence-level ratio and clip, ε = 3e-4/4e-4, seq-mean-token-mean
//	CISPO  clipped stop-gradient IS weight, no lower clip, ε_high = 0.2, token-mean

// AdvantageEstimator names an advantage estimator (verl's adv_estimator).
type AdvantageEstimator string

// The advantage estimators.
const (
	EstimatorGAE         AdvantageEstimator = "gae"
	EstimatorGRPO        AdvantageEstimator = "grpo" // GRPO or Dr.GRPO, by NormAdvByStd
	EstimatorRLOO        AdvantageEstimator = "rloo"
	EstimatorReinforcePP AdvantageEstimator = "reinforce_plus_plus"
)

// Preset is a complete set of learner settings.
type Preset struct {
	Name string `json:"name" yaml:"name"`

	Estimator    AdvantageEstimator `json:"adv_estimator" yaml:"adv_estimator"`
	NormAdvByStd bool               `json:"norm_adv_by_std_in_grpo" yaml:"norm_adv_by_std_in_grpo"` // GRPO: divide by std_g + 1e-6
	Gamma        float64            `json:"gamma" yaml:"gamma"`
	Lambda       float64            `json:"lam" yaml:"lam"`

	ClipLow    float64     `json:"clip_ratio_low" yaml:"clip_ratio_low"`
	ClipHigh   float64     `json:"clip_ratio_high" yaml:"clip_ratio_high"`
	ClipRatioC float64     `json:"clip_ratio_c" yaml:"clip_ratio_c"` // 0 disables dual-clip
	LossAgg    LossAggMode `json:"loss_agg_mode" yaml:"loss_agg_mode"`
	// MicroBatchWeighting weighs the loss as RAGEN does in practice,
	// with micro-batches of one sequence (MicroBatchWeights): every
	// sequence of a mini-batch counts the same, whatever the mode.
	MicroBatchWeighting bool `json:"micro_batch_weighting" yaml:"micro_batch_weighting"`

	EntropyCoeff float64 `json:"entropy_coeff" yaml:"entropy_coeff"`

	UseKLLoss  bool    `json:"use_kl_loss" yaml:"use_kl_loss"`
	KLLossCoef float64 `json:"kl_loss_coef" yaml:"kl_loss_coef"`
	KLLossType KLKind  `json:"kl_loss_type" yaml:"kl_loss_type"`

	UseKLInReward bool    `json:"use_kl_in_reward" yaml:"use_kl_in_reward"`
	KLRewardCoef  float64 `json:"kl_coef" yaml:"kl_coef"` // fixed controller
	KLPenalty     KLKind  `json:"kl_penalty" yaml:"kl_penalty"`

	ClipRangeValue float64 `json:"cliprange_value" yaml:"cliprange_value"`

	// Turn-level credit (credit.go): none, gigpo or solver, on top of a
	// group estimator; StepWeight (ω) and StepGamma (γ) are GiGPO's,
	// SolverAlpha (α) and SolverTransform CAST's.
	Credit          TurnCredit      `json:"credit" yaml:"credit"`
	StepWeight      float64         `json:"gigpo_step_weight" yaml:"gigpo_step_weight"`
	StepGamma       float64         `json:"gigpo_gamma" yaml:"gigpo_gamma"`
	SolverAlpha     float64         `json:"solver_alpha" yaml:"solver_alpha"`
	SolverTransform SolverTransform `json:"solver_transform" yaml:"solver_transform"`
	// BiLevelGAE switches GAE to RAGEN's turn-then-token form
	// (bilevel_gae.go) with HighLevelGamma (γ_h) between turns.
	BiLevelGAE     bool    `json:"bi_level_gae" yaml:"bi_level_gae"`
	HighLevelGamma float64 `json:"high_level_gamma" yaml:"high_level_gamma"`

	// PolicyLoss is the policy-gradient term (policy_loss.go): ppo (the
	// default; "" reads as ppo), gspo, gspo_token or cispo, all on
	// ClipLow/ClipHigh.
	PolicyLoss PolicyLoss `json:"policy_loss" yaml:"policy_loss"`

	// RolloutIS turns on the rollout importance-sampling correction of the
	// train–inference mismatch (rollout_is.go, verl's rollout_is_*): the
	// policy loss of every token is weighted by its π_old/π_sampler ratio
	// at RolloutISLevel (token, sequence, geometric), bounded by
	// RolloutISMode (truncate: TIS; mask: MIS, IcePop) with the thresholds,
	// and vetoed below RolloutISVetoThreshold (0: no veto). It needs
	// ActorBatch.SamplerLogProb; without them the weights are 1.
	RolloutIS               bool    `json:"rollout_is" yaml:"rollout_is"`
	RolloutISLevel          ISLevel `json:"rollout_is_level" yaml:"rollout_is_level"`
	RolloutISMode           ISMode  `json:"rollout_is_mode" yaml:"rollout_is_mode"`
	RolloutISThreshold      float64 `json:"rollout_is_threshold" yaml:"rollout_is_threshold"`             // upper bound U
	RolloutISThresholdLower float64 `json:"rollout_is_threshold_lower" yaml:"rollout_is_threshold_lower"` // lower bound L; 0 = 1/U
	RolloutISVetoThreshold  float64 `json:"rollout_is_veto_threshold" yaml:"rollout_is_veto_threshold"`
}

// basePreset holds the settings every main-table preset shares.
func basePreset() Preset {
	return Preset{
		Gamma: 1, Lambda: 1,
		ClipLow: 0.2, ClipHigh: 0.28, ClipRatioC: 3,
		EntropyCoeff: 0.001,
		KLLossCoef:   0.001, KLLossType: KL3,
		KLPenalty:      KL1,
		ClipRangeValue: 0.5,
		Credit:         CreditNone, StepWeight: 1, StepGamma: 0.95,
		SolverAlpha: 0.1, SolverTransform: SolverAsinh,
		HighLevelGamma: 0.95,
		PolicyLoss:     PolicyLossPPO,
		// verl's defaults, in effect once rollout_is is turned on.
		RolloutISLevel: ISToken, RolloutISMode: ISTruncate,
		RolloutISThreshold: 2, RolloutISVetoThreshold: 1e-4,
	}
}

// PresetPPO is PPO with a critic (GAE) and token-mean aggregation.
func PresetPPO() Preset {
	p := basePreset()
	p.Name, p.Estimator, p.LossAgg = "PPO", EstimatorGAE, TokenMean
	return p
}

// PresetDAPO is RAGEN-2's "DAPO": PPO + clip 0.2/0.28 + no KL + token-mean.
func PresetDAPO() Preset {
	p := PresetPPO()
	p.Name = "DAPO"
	p.ClipLow, p.ClipHigh = 0.2, 0.28
	p.UseKLLoss, p.KLLossCoef = false, 0
	p.UseKLInReward, p.KLRewardCoef = false, 0
	return p
}

// PresetGRPO is GRPO: std-normalised group advantages, seq-mean-token-mean.
func PresetGRPO() Preset {
	p := basePreset()
	p.Name, p.Estimator, p.NormAdvByStd, p.LossAgg = "GRPO", EstimatorGRPO, true, SeqMeanTokenMean
	return p
}

// PresetDrGRPO is Dr.GRPO: mean-centred group advantages, seq-mean-token-sum.
func PresetDrGRPO() Preset {
	p := basePreset()
	p.Name, p.Estimator, p.NormAdvByStd, p.LossAgg = "DrGRPO", EstimatorGRPO, false, SeqMeanTokenSum
	return p
}

// PresetGiGPO is GRPO with GiGPO's step-level advantage from anchor
// states (gigpo.go): ω = 1, γ = 0.95, as the paper.
func PresetGiGPO() Preset {
	p := PresetGRPO()
	p.Name, p.Credit = "GiGPO", CreditGiGPO
	return p
}

// PresetCAST is GRPO with CAST's solver credit (solver_credit.go):
// α = 0.1 with the asinh transform, as the paper.
func PresetCAST() Preset {
	p := PresetGRPO()
	p.Name, p.Credit = "CAST", CreditSolver
	return p
}

// PresetBiLevelPPO is PPO with RAGEN's bi-level GAE (bilevel_gae.go):
// γ_h = 0.95 between turns, γ = λ = 1 inside them.
func PresetBiLevelPPO() Preset {
	p := PresetPPO()
	p.Name, p.BiLevelGAE = "BiLevelPPO", true
	return p
}

// PresetGSPO is GRPO with GSPO's sequence-level ratio and clipping
// (gspo.go) at the paper's ε_low/ε_high = 3e-4/4e-4, seq-mean-token-mean
// (the paper's mean over sequences).
func PresetGSPO() Preset {
	p := PresetGRPO()
	p.Name, p.PolicyLoss = "GSPO", PolicyLossGSPO
	p.ClipLow, p.ClipHigh = 3e-4, 4e-4
	return p
}

// PresetCISPO is GRPO with CISPO's clipped, stop-gradient importance
// weight (cispo.go): no lower clip (ε_low = 1), ε_high = 0.2 (verl's
// example; the MiniMax-M1 report does not state its value), token-mean as
// the report's 1/Σ|o_i|.
func PresetCISPO() Preset {
	p := PresetGRPO()
	p.Name, p.PolicyLoss, p.LossAgg = "CISPO", PolicyLossCISPO, TokenMean
	p.ClipLow, p.ClipHigh = 1, 0.2
	return p
}

// PresetNames lists the presets on RAGEN-2's shared clip, entropy and KL
// defaults (basePreset); NewPreset also accepts PolicyLossPresetNames.
func PresetNames() []string {
	return []string{"PPO", "DAPO", "GRPO", "DrGRPO", "GiGPO", "CAST", "BiLevelPPO"}
}

// PolicyLossPresetNames lists the presets that change the policy loss,
// and with it the clipping range: GSPO and CISPO.
func PolicyLossPresetNames() []string { return []string{"GSPO", "CISPO"} }

// NewPreset returns a named preset (case-insensitive; "dr_grpo" and
// "dr-grpo" are accepted for DrGRPO).
func NewPreset(name string) (Preset, error) {
	switch strings.ToLower(strings.NewReplacer("_", "", "-", "", ".", "").Replace(name)) {
	case "ppo":
		return PresetPPO(), nil
	case "dapo":
		return PresetDAPO(), nil
	case "grpo":
		return PresetGRPO(), nil
	case "drgrpo":
		return PresetDrGRPO(), nil
	case "gigpo":
		return PresetGiGPO(), nil
	case "cast":
		return PresetCAST(), nil
	case "bilevelppo":
		return PresetBiLevelPPO(), nil
	case "gspo":
		return PresetGSPO(), nil
	case "cispo":
		return PresetCISPO(), nil
	}
	return Preset{}, fmt.Errorf("algos: unknown preset %q (want one of %v)", name, append(PresetNames(), PolicyLossPresetNames()...))
}

// Clip returns the PPO clipping parameters.
func (p Preset) Clip() PPOClip {
	return PPOClip{ClipLow: p.ClipLow, ClipHigh: p.ClipHigh, ClipRatioC: p.ClipRatioC}
}

// UsesCritic reports whether the estimator needs a value function.
func (p Preset) UsesCritic() bool { return p.Estimator == EstimatorGAE }

// UsesTokenEstimator reports whether advantages are computed per token
// (GAE, REINFORCE++) rather than per episode within its group (GRPO, RLOO).
func (p Preset) UsesTokenEstimator() bool {
	return p.Estimator == EstimatorGAE || p.Estimator == EstimatorReinforcePP
}

// Validate checks every field.
func (p Preset) Validate() error {
	switch p.Estimator {
	case EstimatorGAE, EstimatorGRPO, EstimatorRLOO, EstimatorReinforcePP:
	default:
		return fmt.Errorf("algos: unknown adv_estimator %q", string(p.Estimator))
	}
	if err := p.validatePolicyLoss(); err != nil {
		return err
	}
	if _, err := ParseLossAggMode(string(p.LossAgg)); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"gamma", p.Gamma}, {"lam", p.Lambda}, {"entropy_coeff", p.EntropyCoeff}, {"kl_loss_coef", p.KLLossCoef}, {"kl_coef", p.KLRewardCoef}, {"cliprange_value", p.ClipRangeValue}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return fmt.Errorf("algos: %s must be finite and ≥ 0, got %v", f.name, f.v)
		}
	}
	if err := p.validateCredit(); err != nil {
		return err
	}
	if p.UseKLLoss {
		if _, err := ParseKLKind(string(p.KLLossType)); err != nil {
			return err
		}
	}
	if p.UseKLInReward {
		if _, err := ParseKLKind(string(p.KLPenalty)); err != nil {
			return err
		}
	}
	if p.RolloutIS {
		if err := p.Correction().Validate(); err != nil {
			return err
		}
	}
	return nil
}

// validatePolicyLoss checks policy_loss and the clipping range it reads:
// CISPO allows clip_ratio_low ≥ 1 (no lower clip); clip_ratio_c, used by
// ppo alone, is checked whatever the loss.
func (p Preset) validatePolicyLoss() error {
	loss, err := ParsePolicyLoss(string(p.PolicyLoss))
	if err != nil {
		return err
	}
	if loss != PolicyLossCISPO {
		return p.Clip().Validate()
	}
	if err := (CISPO{ClipLow: p.ClipLow, ClipHigh: p.ClipHigh}).Validate(); err != nil {
		return err
	}
	return PPOClip{ClipRatioC: p.ClipRatioC}.Validate()
}

// Correction returns the rollout importance-sampling settings.
func (p Preset) Correction() RolloutCorrection {
	return RolloutCorrection{Level: p.RolloutISLevel, Mode: p.RolloutISMode, Threshold: p.RolloutISThreshold,
		ThresholdLower: p.RolloutISThresholdLower, VetoThreshold: p.RolloutISVetoThreshold}
}
