// Command filtering is RAGEN-2's filtering experiment at small scale: no
// filter against SNR-aware top-p 0.9 (the paper's main-table setting,
// softmax with zero-spread groups kept, and the guide's, linear without
// them) and StarPO-S's top-k 0.25, under GRPO and PPO, on Sokoban and
// FrozenLake, 3 seeds each (internal/study). It reports final validation
// success with 95% intervals, steps to a threshold, and the time per step
// the filter saves.
//
//	go run ./scripts/filtering                                  # 8 arms × 3 seeds × 2 envs
//	go run ./scripts/filtering -results docs/results.md          # also rewrite its sections and plots
//	go run ./scripts/filtering -quick                            # 1 seed, 100 steps
//	go run ./scripts/filtering -configs configs/sokoban.yaml -arms GRPO-nofilter,GRPO-topp-linear
//
// Runs live in runs/filtering/<config>/<arm>-seed<N>.
package main

import "github.com/agentrl/agentrl/internal/study"

// filters are the four filter settings the experiment compares.
var filters = []struct {
	name string
	sets []string
}{
	{"nofilter", study.NoFilter},
	{"topp-softmax", []string{"filter.strategy=top_p", "filter.value=0.9", "filter.top_p_prob_mode=softmax", "filter.include_zero=true"}},
	{"topp-linear", study.SNRFilter},
	{"topk", []string{"filter.strategy=top_k", "filter.value=0.25", "filter.include_zero=true"}},
}

// Default is the study as docs/results.md reports it.
func Default() study.Study {
	s := study.Study{
		Name: "filtering", Command: "go run ./scripts/filtering",
		Configs: []string{"configs/sokoban.yaml", "configs/frozenlake.yaml"},
		Seeds:   3, Out: "runs/filtering", Threshold: 0.85,
		Note: "Filters: nofilter (top-p 1, every group); topp-softmax (top-p 0.9, softmax, zero-spread groups kept: the paper's main table); " +
			"topp-linear (top-p 0.9, linear, zero-spread groups dropped: the guide's); topk (the top 25% of groups: StarPO-S).",
	}
	for _, algo := range []string{"GRPO", "PPO"} {
		for _, f := range filters {
			s.Arms = append(s.Arms, study.Arm{Label: algo + "-" + f.name, Preset: algo, Sets: f.sets})
		}
	}
	return s
}

func main() { study.Main(Default()) }
