// Command slip is RAGEN-2's FrozenLake slip-rate sweep: when does the SNR
// filter help? Slipping makes returns noisy within a group, so the reward
// spread the filter ranks mixes signal with luck. Every slip rate runs
// without and with the filter, under GRPO, 3 seeds each
// (internal/study/ragen2.Slip).
//
//	go run ./scripts/slip                                  # 6 arms × 3 seeds
//	go run ./scripts/slip -quick                            # 1 seed, 30 steps
//	go run ./scripts/slip -results docs/results.md
//
// success_rate is the probability that a move goes where intended (1: no
// slipping; Gymnasium's is_slippery is 1/3). Runs live in
// runs/slip/<arm>-seed<N>.
package main

import (
	"github.com/agentrl/agentrl/internal/study"
	"github.com/agentrl/agentrl/internal/study/ragen2"
)

// Default is the study as docs/results.md reports it.
func Default() study.Study { return ragen2.Slip() }

func main() { study.Main(Default()) }
