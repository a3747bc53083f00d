// Command thinkbudget relates mutual information to the length of the
// reasoning on FrozenLake: the shipped brief rationale, the expert's full
// sentences with room to write them, and the full sentences squeezed into
// a shorter reply budget (internal/study/ragen2.ThinkBudget).
//
//	go run ./scripts/thinkbudget                         # 3 arms × 2 seeds
//	go run ./scripts/thinkbudget -quick                   # 1 seed, 30 steps
//	go run ./scripts/thinkbudget -results docs/results.md
//
// Runs live in runs/thinkbudget/<arm>-seed<N>.
package main

import (
	"github.com/agentrl/agentrl/internal/study"
	"github.com/agentrl/agentrl/internal/study/ragen2"
)

// Default is the study as docs/results.md reports it.
func Default() study.Study { return ragen2.ThinkBudget() }

func main() { study.Main(Default()) }
