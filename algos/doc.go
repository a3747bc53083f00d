// Package algos is the math of agentrl's learner: advantage estimators,
// per-token policy/value/KL/entropy losses with their gradients, rollout
// filters, early-stop trackers and the RAGEN-2 template-collapse metrics.
// Everything is a pure function over float64 slices (plus two small
// serialisable state types); there is no model, environment or I/O here.
//
// One file per idea, each with its formula in the file comment:
//
//	gae.go               GAE with verl's loss-mask skipping, masked whitening
//	grpo.go              GRPO and Dr.GRPO group advantages
//	rloo.go              RLOO leave-one-out advantages
//	reinforcepp.go       REINFORCE++ (global whitening, optional KL-in-reward)
//	groups.go            Groups, OutcomeRewards, BroadcastToTokens
//	ppo.go               PPO clipped surrogate, clip-higher, dual-clip, ∂/∂logp
//	gspo.go              GSPO sequence-level ratio and clip, GSPO-token
//	cispo.go             CISPO clipped stop-gradient importance weight
//	policy_loss.go       the policy_loss choice: ppo, gspo, gspo_token, cispo
//	agg.go               loss aggregation modes as per-token weights
//	kl.go                k1 / abs / k2 / k3 (low_var_kl) KL, as loss or reward penalty
//	entropy.go           entropy bonus
//	sft.go               supervised (warm-start) negative log-likelihood
//	value.go             clipped value loss
//	loss.go              the assembled actor and critic objectives, advantage dispatch
//	episodes.go          advantages for episodes split into per-turn sequences
//	turns.go             Turn: the unit of turn-level credit, its checks
//	credit.go            turn-level credit on a group estimator, dispatch
//	gigpo.go             GiGPO step advantages from anchor-state groups
//	solver_credit.go     CAST solver cost-to-go credit (asinh, batch RMS)
//	bilevel_gae.go       RAGEN's bi-level (turn, then token) GAE
//	preset.go            PPO, DAPO, GRPO, DrGRPO, GiGPO, CAST, BiLevelPPO, GSPO, CISPO presets
//	filter.go            group scores, FilterGroups, metrics
//	filter_topp.go       SNR-aware top-p (linear and softmax)
//	filter_topk.go       top-k (StarPO-S), top-k-abs, min-p
//	dynamic_sampling.go  DAPO dynamic sampling helper
//	earlystop.go         empty-after-filter and reward-variance early stops
//	collapse.go          MI / retrieval / entropy collapse metrics, EMA
//	collapse_sampling.go first-turn and trajectory-uniform pair sampling
//	mismatch.go          train–inference mismatch: sampler vs learner log-probs
//	rollout_is.go        its correction: TIS / MIS weights at token, sequence or geometric level, veto
//	icepop.go            IcePop: token-level masked importance sampling in [0.5, 5]
//
// Conventions: token-level data are ragged [][]float64 matrices (row = one
// sequence) with a [][]bool loss mask of the same shape (true = the token is
// trained: an assistant token). Inputs are checked: mismatched shapes and NaN
// or infinite values at in-mask positions are errors, never panics.
// Out-of-mask positions are ignored on input and 0 on output.
//
// # Metric names
//
// All metrics are map[string]float64 with RAGEN/verl names; (+) marks
// agentrl additions.
//
// FilterResult.Metrics:
//
//	rollout/in_group_reward_std          mean over groups of the unbiased in-group std
//	rollout/in_group_reward_max          mean over groups of the in-group max
//	rollout/in_group_reward_mean         mean over groups of the in-group mean
//	rollout/in_group_reward_sum          mean over groups of the in-group sum
//	rollout/in_group_reward_var (+)      mean over groups of the unbiased in-group variance
//	rollout/chosen_in_group_reward_{std,max,mean,sum}   the same over kept groups (0 if none)
//	rollout/in_group_{std,max,mean}, rollout/chosen_in_group_{std,max,mean}   base-name duplicates
//	rollout/filter_kept_count            kept groups
//	rollout/filter_kept_ratio            kept groups / all groups
//	rollout/filter_zero_count            groups with |score| ≤ 1e-10
//	rollout/filter_zero_variance_count (+)  groups whose episodes all scored the same
//	rollout/filter_kept_score_mass (+)   Σ kept scores / Σ all scores
//	rollout/empty_after_filter           1 when nothing was kept
//
// EarlyStop.Metrics:
//
//	rollout/consecutive_empty_after_filter_steps
//	early_stopped/empty_filtered_steps, early_stopped/reward_variance_collapse   1 once stopped
//
// CollapseResult.Metrics(prefix), prefix = collapse_first_turn_sample or
// collapse_trajectory_sample:
//
//	<prefix>/mi_estimate, <prefix>/mi_seq_estimate, <prefix>/mi_upper_bound
//	<prefix>/matched_log_prob_mean, <prefix>/marginal_log_prob_mean
//	<prefix>/conditional_entropy_est, <prefix>/reasoning_entropy_est
//	<prefix>/conditional_entropy_seq_est, <prefix>/reasoning_entropy_seq_est
//	<prefix>/marginal_std, <prefix>/marginal_std_seq
//	<prefix>/mi_zscore, <prefix>/mi_zscore_seq
//	<prefix>/marginal_std_ema, <prefix>/marginal_std_ema_seq        after CollapseEMA.Update
//	<prefix>/mi_zscore_ema, <prefix>/mi_zscore_ema_seq              after CollapseEMA.Update
//	<prefix>/retrieval_accuracy, <prefix>/retrieval_chance_level, <prefix>/retrieval_above_chance
//	<prefix>/retrieval_accuracy@k, <prefix>/retrieval_chance_level@k, <prefix>/retrieval_above_chance@k   k = 2, 4, 8
//
// PairSample.FirstTurnCountMetrics and ValidThinkingRate:
//
//	collapse/first_turn_num_total, collapse/first_turn_num_valid, collapse/first_turn_valid_rate
//	collapse/valid_thinking_rate
//
// GiGPOStats.Metrics and SolverStats.Metrics (all +):
//
//	credit/anchor_groups, credit/anchor_group_size_mean, credit/anchor_singleton_ratio, credit/step_adv_abs_mean
//	credit/solver_rms, credit/solver_deadlocks, credit/solver_known_ratio, credit/solver_adv_raw_mean
//	credit/solver_progress_ratio, credit/solver_wasted_ratio, credit/solver_harmful_ratio
//
// ActorLossResult.Metrics and CriticLossResult.Metrics:
//
//	actor/loss (+), actor/pg_loss, actor/pg_clipfrac, actor/pg_clipfrac_lower,
//	actor/ppo_kl, actor/entropy, actor/kl_loss
//	critic/vf_loss, critic/vf_clipfrac
//
// RolloutISResult.Metrics (also in ActorLossResult.Metrics when rollout_is
// applied; see rollout_is.go for their definitions):
//
//	mismatch/rollout_is_{mean,max,min,std,eff_sample_size}
//	mismatch/rollout_is_ratio_fraction_high, mismatch/rollout_is_ratio_fraction_low
//	mismatch/rollout_is_veto_fraction, mismatch/rollout_is_catastrophic_token_fraction
//	mismatch/rollout_is_masked_fraction, mismatch/rollout_is_seq_masked_fraction   mask mode only
package algos
