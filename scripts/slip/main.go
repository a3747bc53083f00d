// Command slip is RAGEN-2's FrozenLake slip-rate sweep: when does the SNR
// filter help? Slipping makes returns noisy within a group, so the reward
// spread the filter ranks mixes signal with luck. Every slip rate runs
// without and with the filter, under GRPO, 3 seeds each (internal/study).
//
//	go run ./scripts/slip                                  # 8 arms × 3 seeds
//	go run ./scripts/slip -quick                            # 1 seed, 100 steps
//	go run ./scripts/slip -results docs/results.md
//
// success_rate is the probability that a move goes where intended (1: no
// slipping; Gymnasium's is_slippery is 1/3). Runs live in
// runs/slip/<arm>-seed<N>.
package main

import "github.com/agentrl/agentrl/internal/study"

// Default is the study as docs/results.md reports it.
func Default() study.Study {
	s := study.Study{
		Name: "slip", Command: "go run ./scripts/slip",
		Configs: []string{"configs/frozenlake.yaml"},
		Seeds:   3, Out: "runs/slip", Threshold: 0.6,
		Note: "GRPO on FrozenLake; sN: env.config.success_rate N for training and validation; nofilter or the SNR filter (top-p 0.9 linear).",
	}
	for _, rate := range []string{"1.0", "0.8", "0.6", "0.333"} {
		for _, f := range []struct {
			name string
			sets []string
		}{
			{"nofilter", study.NoFilter},
			{"filter", study.SNRFilter},
		} {
			s.Arms = append(s.Arms, study.Arm{Label: "s" + rate + "-" + f.name, Preset: "GRPO",
				Sets: append([]string{"env.config.success_rate=" + rate}, f.sets...)})
		}
	}
	return s
}

func main() { study.Main(Default()) }
