// Command singleturn asks whether reasoning collapses differently in
// single-turn settings: the bandit and Countdown configs under PPO without
// the filter, at the shipped entropy bonus and at strong ones, 2 seeds
// each (internal/study/ragen2.SingleTurn). Compare its collapse metrics
// and regimes with the multi-turn runs of scripts/collapse.
//
//	go run ./scripts/singleturn                         # 3 arms × 2 seeds × 2 envs
//	go run ./scripts/singleturn -quick                   # 1 seed, 30 steps
//	go run ./scripts/singleturn -results docs/results.md
//
// Runs live in runs/singleturn/<config>/<arm>-seed<N>.
package main

import (
	"github.com/agentrl/agentrl/internal/study"
	"github.com/agentrl/agentrl/internal/study/ragen2"
)

// Default is the study as docs/results.md reports it.
func Default() study.Study { return ragen2.SingleTurn() }

func main() { study.Main(Default()) }
