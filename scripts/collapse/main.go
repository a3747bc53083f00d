// Command collapse is RAGEN-2's attempt to induce template collapse:
// sweeps of the entropy bonus and of the KL-to-reference coefficient on
// Sokoban with PPO, without and with the SNR filter (internal/study). The
// regularisers push every input the same way; when they dominate the
// reward signal the paper sees within-input entropy stay up while mutual
// information falls. Each run logs the collapse metrics, the collapse
// alarm's regime (collapse/regime; a change is logged with a sample
// reply) and transcripts; `trainer report` correlates them with success.
//
//	go run ./scripts/collapse                                  # 16 arms × 3 seeds
//	go run ./scripts/collapse -quick                            # 1 seed, 100 steps
//	go run ./scripts/collapse -results docs/results.md
//
// Runs live in runs/collapse/<arm>-seed<N>.
package main

import (
	"fmt"

	"github.com/agentrl/agentrl/internal/study"
)

var (
	coefficients = []string{"0.001", "0.01", "0.03", "0.1"}
	filterSets   = []struct {
		name string
		sets []string
	}{
		{"nofilter", study.NoFilter},
		{"filter", study.SNRFilter},
	}
)

// Default is the study as docs/results.md reports it.
func Default() study.Study {
	s := study.Study{
		Name: "collapse", Command: "go run ./scripts/collapse",
		Configs: []string{"configs/sokoban.yaml"},
		Seeds:   3, Out: "runs/collapse", Threshold: 0.85,
		Note: "PPO; entN: entropy_coeff N (no KL); klN: a low_var_kl loss of coefficient N (entropy 0); nofilter or the SNR filter (top-p 0.9 linear). " +
			"The collapse alarm's regime and the MI proxies are in each run's metrics (`trainer report` lists their correlation with success).",
	}
	for _, f := range filterSets {
		for _, c := range coefficients {
			s.Arms = append(s.Arms,
				study.Arm{Label: fmt.Sprintf("ent%s-%s", c, f.name), Preset: "PPO", Sets: append([]string{"algo.entropy_coeff=" + c, "algo.use_kl_loss=false"}, f.sets...)},
				study.Arm{Label: fmt.Sprintf("kl%s-%s", c, f.name), Preset: "PPO", Sets: append([]string{"algo.entropy_coeff=0", "algo.use_kl_loss=true", "algo.kl_loss_coef=" + c}, f.sets...)})
		}
	}
	return s
}

func main() { study.Main(Default()) }
