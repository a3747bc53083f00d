// Command gradient is RAGEN-2's gradient analysis (its RQ2) at small
// scale: PPO and GRPO on Sokoban with the entropy bonus and a KL loss on
// (0.001 each, the paper's sweep baseline) and no filter, measuring every
// 25 steps the norms of the actor gradient's task, entropy and KL terms in
// 4 buckets of groups ranked by reward std (analysis.gradient_every). The
// paper's claim: the task term grows with the reward spread, the
// regularisers' stay flat, so low-spread groups carry mostly noise.
//
//	go run ./scripts/gradient                        # 2 arms × 3 seeds
//	go run ./scripts/gradient -quick                  # 1 seed, 100 steps
//	go run ./scripts/gradient -results docs/results.md
//
// Runs live in runs/gradient/<arm>-seed<N>.
package main

import "github.com/agentrl/agentrl/internal/study"

// Default is the study as docs/results.md reports it.
func Default() study.Study {
	sets := append([]string{"algo.entropy_coeff=0.001", "algo.use_kl_loss=true", "algo.kl_loss_coef=0.001",
		"analysis.gradient_every=25", "analysis.gradient_buckets=4"}, study.NoFilter...)
	return study.Study{
		Name: "gradient", Command: "go run ./scripts/gradient",
		Configs: []string{"configs/sokoban.yaml"},
		Arms:    []study.Arm{{Label: "PPO", Preset: "PPO", Sets: sets}, {Label: "GRPO", Preset: "GRPO", Sets: sets}},
		Seeds:   3, Out: "runs/gradient", Threshold: 0.85,
		Note: "Entropy 0.001 and KL loss 0.001 on, no filter; gradient terms measured every 25 steps in 4 reward-std buckets of the 8 groups (2 groups each).",
	}
}

func main() { study.Main(Default()) }
