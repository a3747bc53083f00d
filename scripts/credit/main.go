// Command credit compares credit-assignment methods on the default
// Sokoban setup: GRPO, GiGPO, CAST (solver credit), PPO and bi-level PPO,
// 3 seeds each, with curves and 95% intervals over seeds
// (internal/study/ragen2.Credit).
//
//	go run ./scripts/credit                                  # 5 arms × 3 seeds
//	go run ./scripts/credit -results docs/results.md          # also rewrite that file's section and plot
//	go run ./scripts/credit -quick                            # 1 seed, 30 steps
//	go run ./scripts/credit -arms 'CAST,CAST-nofilter=CAST+filter.value=1+filter.include_zero=true'
//	go run ./scripts/credit -report -results docs/results.md  # rebuild the section from finished runs
//
// An arm is a preset name, or LABEL=PRESET+KEY=VALUE+… with settings of
// its own on top of the -set ones. Runs live in runs/credit/<arm>-seed<N>.
package main

import (
	"github.com/agentrl/agentrl/internal/study"
	"github.com/agentrl/agentrl/internal/study/ragen2"
)

// Default is the study as docs/results.md reports it.
func Default() study.Study { return ragen2.Credit() }

func main() { study.Main(Default()) }
