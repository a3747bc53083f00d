// Command collapse is RAGEN-2's attempt to induce template collapse:
// a strong entropy bonus or KL loss on Sokoban with PPO, without and with
// the SNR filter (internal/study/ragen2.Collapse). The regularisers push
// every input the same way; when they dominate the reward signal the paper
// sees within-input entropy stay up while mutual information falls. Each
// run logs the collapse metrics, the collapse alarm's regime
// (collapse/regime; a change is logged with a sample reply), transcripts
// and the gradient analysis by reward-std bucket.
//
//	go run ./scripts/collapse                                  # 7 arms × 2 seeds
//	go run ./scripts/collapse -quick                            # 1 seed, 30 steps
//	go run ./scripts/collapse -results docs/results.md
//
// Runs live in runs/collapse/<arm>-seed<N>.
package main

import (
	"github.com/agentrl/agentrl/internal/study"
	"github.com/agentrl/agentrl/internal/study/ragen2"
)

// Default is the study as docs/results.md reports it.
func Default() study.Study { return ragen2.Collapse() }

func main() { study.Main(Default()) }
