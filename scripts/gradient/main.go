// Command gradient is RAGEN-2's gradient analysis (its RQ2) at small
// scale: PPO and GRPO on Sokoban with the entropy bonus and a KL loss on
// (0.001 each, the paper's sweep baseline) and no filter, measuring every
// 25 steps the norms of the actor gradient's task, entropy and KL terms in
// 4 buckets of groups ranked by reward std (analysis.gradient_every;
// internal/study/ragen2.Gradient). The paper's claim: the task term grows
// with the reward spread, the regularisers' stay flat, so low-spread
// groups carry mostly noise. The suite (scripts/ragen2) measures the same
// on its collapse runs; this is the longer, 400-step version.
//
//	go run ./scripts/gradient                        # 2 arms × 3 seeds
//	go run ./scripts/gradient -quick                  # 1 seed, 30 steps
//	go run ./scripts/gradient -results docs/results.md
//
// Runs live in runs/gradient/<arm>-seed<N>.
package main

import (
	"github.com/agentrl/agentrl/internal/study"
	"github.com/agentrl/agentrl/internal/study/ragen2"
)

// Default is the study as docs/results.md reports it.
func Default() study.Study { return ragen2.Gradient() }

func main() { study.Main(Default()) }
