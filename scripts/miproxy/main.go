// Command miproxy asks which mutual-information proxy is most stable
// online, and how its noise depends on M, the number of (prompt,
// reasoning) pairs the collapse metrics score: the shipped Sokoban run
// with collapse.samples 16, 32, 64 and 128 (internal/study/ragen2.MIProxy).
// The collapse metrics draw from their own random stream, so the arms of
// one seed train identically and differ only in the estimator; the results
// add a table of each proxy's step-to-step noise and its spread across
// seeds.
//
//	go run ./scripts/miproxy                         # 4 arms × 2 seeds
//	go run ./scripts/miproxy -quick                   # 1 seed, 30 steps
//	go run ./scripts/miproxy -results docs/results.md
//
// Runs live in runs/miproxy/<arm>-seed<N>.
package main

import (
	"github.com/agentrl/agentrl/internal/study"
	"github.com/agentrl/agentrl/internal/study/ragen2"
)

// Default is the study as docs/results.md reports it.
func Default() study.Study { return ragen2.MIProxy() }

func main() { study.Main(Default()) }
