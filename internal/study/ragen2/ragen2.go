// Package ragen2 defines the experiments of the RAGEN-2 study at small
// scale (shared/reference: RAGEN-2, "Reasoning Collapse in Agentic RL"),
// one study.Study each, as the scripts under scripts/ run them and
// docs/results.md reports them. Suite is the whole study in the order
// scripts/ragen2 runs it, sized to fit 2 hours on 2 cores; Credit and
// Gradient are the longer companion studies outside it.
package ragen2

import (
	"fmt"
	"slices"

	"github.com/agentrl/agentrl/internal/report"
	"github.com/agentrl/agentrl/internal/study"
)

// Steps is the RL length of the suite's multi-turn runs: the paper trains
// 400 steps; at this scale the curves flatten well before 150 (see the
// 400-step credit study), and 150 is what lets the suite fit 2 hours.
const Steps = "run.steps=150"

// filterSetting is one filter configuration the studies compare.
type filterSetting struct {
	name string
	sets []string
}

// filters are the four filter settings of the filtering experiment.
var filters = []filterSetting{
	{"nofilter", study.NoFilter},
	{"topp-softmax", []string{"filter.strategy=top_p", "filter.value=0.9", "filter.top_p_prob_mode=softmax", "filter.include_zero=true"}},
	{"topp-linear", study.SNRFilter},
	{"topk", []string{"filter.strategy=top_k", "filter.value=0.25", "filter.include_zero=true"}},
}

// onOff are the no-filter and SNR-filter settings of the sweeps.
var onOff = []filterSetting{{"nofilter", study.NoFilter}, {"filter", study.SNRFilter}}

func with(base []string, more ...string) []string { return append(slices.Clone(base), more...) }

// Filtering is no filter against SNR-aware top-p 0.9 (the paper's
// main-table setting, softmax with zero-spread groups kept, and the
// guide's, linear without them) and StarPO-S's top-k 0.25, under GRPO and
// PPO, on Sokoban and FrozenLake, 3 seeds each. PPO arms weigh the loss as
// RAGEN does in effect (study.RAGENWeighting); one more arm repeats the
// main-table setting with the mini-batch token-mean on Sokoban, to tell
// whether that choice matters.
func Filtering() study.Study {
	s := study.Study{
		Name: "filtering", Command: "go run ./scripts/filtering",
		Configs: []string{"configs/sokoban.yaml", "configs/frozenlake.yaml"},
		Seeds:   3, Out: "runs/filtering", Threshold: 0.85, Sets: []string{Steps},
		Note: "Filters: nofilter (top-p 1, every group); topp-softmax (top-p 0.9, softmax, zero-spread groups kept: the paper's main table); " +
			"topp-linear (top-p 0.9, linear, zero-spread groups dropped: the guide's); topk (the top 25% of groups: StarPO-S). " +
			"PPO arms weigh the loss as RAGEN does in effect (algo.micro_batch_weighting: every sequence equally); PPO-topp-softmax-tokenmean (Sokoban only) is the main-table arm with the mini-batch token-mean instead. 150 RL steps.",
	}
	for _, algo := range []string{"GRPO", "PPO"} {
		for _, f := range filters {
			sets := f.sets
			if algo == "PPO" {
				sets = with(f.sets, study.RAGENWeighting)
			}
			s.Arms = append(s.Arms, study.Arm{Label: algo + "-" + f.name, Preset: algo, Sets: sets})
		}
	}
	// The weighting question is answered on Sokoban, where the replies'
	// lengths vary most; on FrozenLake every arm ends level.
	s.Arms = append(s.Arms, study.Arm{Label: "PPO-topp-softmax-tokenmean", Preset: "PPO", Sets: filters[1].sets,
		Configs: []string{"configs/sokoban.yaml"}})
	return s
}

// gradientSets measure the actor gradient's task, entropy and KL terms
// every 25 steps in 4 reward-std buckets (analysis.gradient_every).
var gradientSets = []string{"analysis.gradient_every=25", "analysis.gradient_buckets=4"}

// stopIncoherent makes the collapse alarm end a run whose reasoning has
// dissolved into random tokens: nothing is learned after that (success
// falls to 0 and stays there), so the steps are saved.
const stopIncoherent = "collapse.alarm.stop_on=[incoherent]"

// Collapse is the attempt to induce template collapse: PPO on Sokoban with
// a strong entropy bonus (0.03, 0.05, 0.1; no KL) or KL loss (0.1; no
// entropy bonus), without and with the SNR filter, 2 seeds each, with the
// gradient analysis on so the regularisers' share of the update is
// measured, and the alarm stopping runs that turn incoherent. The quick 100-step sweep showed that 0.001–0.03 leave the
// policy in place; these are the coefficients where something can happen.
func Collapse() study.Study {
	s := study.Study{
		Name: "collapse", Command: "go run ./scripts/collapse",
		Configs: []string{"configs/sokoban.yaml"},
		Seeds:   2, Out: "runs/collapse", Threshold: 0.85, Sets: with(gradientSets, Steps, stopIncoherent),
		Note: "PPO (RAGEN's effective loss weighting); entN: entropy_coeff N (no KL); klN: a low_var_kl loss of coefficient N (entropy 0); nofilter or the SNR filter (top-p 0.9 linear); 150 RL steps. " +
			"Gradient terms measured every 25 steps in 4 reward-std buckets. The collapse alarm stops a run whose reasoning turns incoherent (collapse.alarm.stop_on).",
	}
	for _, f := range onOff {
		for _, c := range []string{"0.03", "0.05", "0.1"} {
			s.Arms = append(s.Arms, study.Arm{Label: fmt.Sprintf("ent%s-%s", c, f.name), Preset: "PPO",
				Sets: with(f.sets, "algo.entropy_coeff="+c, "algo.use_kl_loss=false", study.RAGENWeighting)})
		}
	}
	s.Arms = append(s.Arms, study.Arm{Label: "kl0.1-nofilter", Preset: "PPO",
		Sets: with(study.NoFilter, "algo.entropy_coeff=0", "algo.use_kl_loss=true", "algo.kl_loss_coef=0.1", study.RAGENWeighting)})
	return s
}

// Slip is the FrozenLake slip-rate sweep (when does the filter help?):
// success_rate 1, 0.6 and 1/3 (Gymnasium's is_slippery), GRPO without
// and with the SNR filter, 3 seeds each. The warm start is the same for
// every rate (demonstrations on the deterministic lake), as the paper
// starts every rate from one model; only RL sees the slip.
func Slip() study.Study {
	s := study.Study{
		Name: "slip", Command: "go run ./scripts/slip",
		Configs: []string{"configs/frozenlake.yaml"},
		Seeds:   3, Out: "runs/slip", Threshold: 0.6, Sets: []string{Steps, "warm_start.env_config.success_rate=1"},
		Note: "GRPO on FrozenLake; sN: env.config.success_rate N for training and validation; every arm of a seed starts from the same warm start, on the deterministic lake (warm_start.env_config.success_rate=1); " +
			"nofilter or the SNR filter (top-p 0.9 linear); 150 RL steps.",
	}
	for _, rate := range []string{"1.0", "0.6", "0.333"} {
		for _, f := range onOff {
			s.Arms = append(s.Arms, study.Arm{Label: "s" + rate + "-" + f.name, Preset: "GRPO",
				Sets: with(f.sets, "env.config.success_rate="+rate)})
		}
	}
	return s
}

// SingleTurn asks whether collapse differs in single-turn settings: the
// bandit and Countdown configs under PPO without the filter, at the
// shipped entropy bonus (0.001) and at the two strongest of Collapse, 2
// seeds each, for 250 steps (the 400-step runs collapsed by step 230).
func SingleTurn() study.Study {
	s := study.Study{
		Name: "singleturn", Command: "go run ./scripts/singleturn",
		Configs: []string{"configs/bandit.yaml", "configs/countdown.yaml"},
		Seeds:   2, Out: "runs/singleturn", Threshold: 0.9, Sets: []string{"run.steps=250"},
		Note: "PPO (RAGEN's effective loss weighting), no filter, no KL; entN: entropy_coeff N; 250 RL steps (the configs ship 400).",
	}
	for _, c := range []string{"0.001", "0.05", "0.1"} {
		s.Arms = append(s.Arms, study.Arm{Label: "ent" + c, Preset: "PPO",
			Sets: with(study.NoFilter, "algo.entropy_coeff="+c, "algo.use_kl_loss=false", study.RAGENWeighting)})
	}
	return s
}

// MIProxy asks which MI proxy is most stable online, and how that depends
// on M, the number of (prompt, reasoning) pairs scored: the shipped
// Sokoban run with collapse.samples 16, 32, 64 and 128 (every trajectory
// of the batch). The collapse metrics draw from a random stream of their
// own, so the arms of one seed train identically and differ only in the
// estimator.
func MIProxy() study.Study {
	s := study.Study{
		Name: "miproxy", Command: "go run ./scripts/miproxy",
		Configs: []string{"configs/sokoban.yaml"},
		Seeds:   2, Out: "runs/miproxy", Threshold: 0.85, Sets: []string{"run.steps=100"},
		Note: "The shipped GRPO run (SNR filter) for 100 steps, collapse metrics every 5 steps on M scored pairs (collapse.samples M); the training of one seed is the same in every arm.",
	}
	for _, m := range []string{"16", "32", "64", "128"} {
		s.Arms = append(s.Arms, study.Arm{Label: "M" + m, Preset: "GRPO", Sets: []string{"collapse.samples=" + m}})
	}
	s.Extra = func(arms []report.Arm) string {
		return "Stability of each MI proxy (report.ProxyTable): noise is the step-to-step scatter of one run's readings; " +
			"error vs M128 compares each reading with the one from all 128 first-turn chains at the same seed and step.\n\n" +
			report.ProxyTable(arms, "M128")
	}
	return s
}

// ThinkBudget relates MI to the length of the reasoning on FrozenLake:
// the shipped brief rationale ("P2,3 G0,2") within its 48-token reply
// budget, the expert's full sentences (about 120 characters: "I am at
// (2, 3) and the goal is at (0, 2). The shortest safe route is …") within
// 96 tokens, and the full sentences squeezed into 40 tokens, where the
// warm-started reply no longer fits and RL must shorten it, under GRPO
// with the SNR filter, 2 seeds each. The rationale check reads the brief
// form only, so the full arms' ground truth is not measured.
func ThinkBudget() study.Study {
	return study.Study{
		Name: "thinkbudget", Command: "go run ./scripts/thinkbudget",
		Configs: []string{"configs/frozenlake.yaml"},
		Seeds:   2, Out: "runs/thinkbudget", Threshold: 0.85, Sets: []string{Steps},
		Note: "GRPO with the SNR filter on FrozenLake; brief-48: the brief rationale, max_tokens 48 (shipped); full-N: the warm start writes the expert's full sentences, max_tokens N (the rationale check reads the brief form only: n/a for full); 150 RL steps.",
		Arms: []study.Arm{
			{Label: "brief-48", Preset: "GRPO"},
			{Label: "full-96", Preset: "GRPO", Sets: []string{"warm_start.rationale=full", "rollout.sampling.max_tokens=96"}},
			{Label: "full-40", Preset: "GRPO", Sets: []string{"warm_start.rationale=full", "rollout.sampling.max_tokens=40"}},
		},
	}
}

// Gradient is RAGEN-2's gradient analysis (its RQ2) on its own: PPO and
// GRPO on Sokoban with the entropy bonus and a KL loss at the paper's
// sweep baseline (0.001 each), no filter, 400 steps, 3 seeds. The suite
// measures the same on the Collapse runs; this is the longer version.
func Gradient() study.Study {
	sets := with(with([]string{"algo.entropy_coeff=0.001", "algo.use_kl_loss=true", "algo.kl_loss_coef=0.001"}, gradientSets...), study.NoFilter...)
	return study.Study{
		Name: "gradient", Command: "go run ./scripts/gradient",
		Configs: []string{"configs/sokoban.yaml"},
		Arms:    []study.Arm{{Label: "PPO", Preset: "PPO", Sets: sets}, {Label: "GRPO", Preset: "GRPO", Sets: sets}},
		Seeds:   3, Out: "runs/gradient", Threshold: 0.85,
		Note: "Entropy 0.001 and KL loss 0.001 on, no filter; gradient terms measured every 25 steps in 4 reward-std buckets of the 8 groups (2 groups each).",
	}
}

// Credit compares the credit-assignment methods on the shipped Sokoban
// setup (400 steps, 3 seeds): GRPO, GiGPO, CAST, PPO and bi-level PPO.
func Credit() study.Study {
	return study.Study{
		Name: "credit", Command: "go run ./scripts/credit",
		Configs: []string{"configs/sokoban.yaml"},
		Arms: []study.Arm{{Label: "GRPO", Preset: "GRPO"}, {Label: "GiGPO", Preset: "GiGPO"}, {Label: "CAST", Preset: "CAST"},
			{Label: "PPO", Preset: "PPO"}, {Label: "BiLevelPPO", Preset: "BiLevelPPO"}},
		Seeds: 3, Out: "runs/credit", Threshold: 0.85,
	}
}

// Suite is the RAGEN-2 study in the order scripts/ragen2 runs it.
func Suite() []study.Study {
	return []study.Study{Filtering(), Collapse(), Slip(), SingleTurn(), MIProxy(), ThinkBudget()}
}
