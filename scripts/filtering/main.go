// Command filtering is RAGEN-2's filtering experiment at small scale: no
// filter against SNR-aware top-p 0.9 (the paper's main-table setting,
// softmax with zero-spread groups kept, and the guide's, linear without
// them) and StarPO-S's top-k 0.25, under GRPO and PPO, on Sokoban and
// FrozenLake, 3 seeds each (internal/study/ragen2.Filtering). It reports
// final validation success with 95% intervals, steps to a threshold, and
// the time per step the filter saves.
//
//	go run ./scripts/filtering                                  # 9 arms × 3 seeds × 2 envs
//	go run ./scripts/filtering -results docs/results.md          # also rewrite its sections and plots
//	go run ./scripts/filtering -quick                            # 1 seed, 30 steps
//	go run ./scripts/filtering -configs configs/sokoban.yaml -arms GRPO-nofilter,GRPO-topp-linear
//
// Runs live in runs/filtering/<config>/<arm>-seed<N>.
package main

import (
	"github.com/agentrl/agentrl/internal/study"
	"github.com/agentrl/agentrl/internal/study/ragen2"
)

// Default is the study as docs/results.md reports it.
func Default() study.Study { return ragen2.Filtering() }

func main() { study.Main(Default()) }
