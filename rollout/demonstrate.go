package rollout

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// Demonstrate plays one episode per seed with the environment's expert
// writing the replies, in exactly the conversation format Run produces
// (same prompts, parsing and limits), so a model trained on the transcripts
// sees at training time what it will see in rollouts. Each reply is
// "<think>rationale</think><answer>a1 || a2</answer>" with up to
// MaxActionsPerTurn actions.
//
// DemoOptions shape the demonstrations.
type DemoOptions struct {
	// Perturb is the probability that a demonstrated action is replaced by
	// one drawn uniformly from the vocabulary (the rationale is kept), which
	// makes the demonstrations, and a model imitating them, clearly worse
	// than the expert.
	Perturb float64
	// Brief writes the expert's terse rationale (Advice.Brief) where it has
	// one, for small models.
	Brief bool
	// Seed drives the perturbations and the choice of phrasings.
	Seed uint64
}

// answerText writes actions as a reply's answer: <answer>a1 || a2</answer>,
// or with tools the compact calls that make them.
func answerText(cfg *Config, ep *episode, actions []string) (string, error) {
	if cfg.Tools {
		return writeCalls(ep, actions)
	}
	return "<answer>" + strings.Join(actions, " "+cfg.ActionSeparator+" ") + "</answer>", nil
}

// Demonstrate plays the demonstrations; see DemoOptions.
func Demonstrate(ctx context.Context, cfg Config, factory *envs.Factory, seeds []uint64, opts DemoOptions) ([]Trajectory, error) {
	return runText(ctx, cfg, factory, seeds, func(i int, ep *episode) replyFunc {
		rng := envs.NewRand(mixSeed(opts.Seed, seeds[i]), 0xde40)
		return func(context.Context, int) (string, error) {
			expert, ok := ep.env.(envs.Expert)
			if !ok {
				return "", fmt.Errorf("environment %q has no expert", factory.Name())
			}
			advice, err := expert.Advise(cfg.MaxActionsPerTurn, rng)
			if err != nil {
				return "", fmt.Errorf("expert: %w", err)
			}
			actions := append([]string(nil), advice.Actions...)
			if len(actions) > cfg.MaxActionsPerTurn {
				actions = actions[:cfg.MaxActionsPerTurn]
			}
			if vocab := ep.vocabulary; len(vocab) > 0 {
				for j := range actions {
					if rng.Float64() < opts.Perturb {
						actions[j] = vocab[rng.IntN(len(vocab))]
					}
				}
			}
			answer, err := answerText(&cfg, ep, actions)
			if err != nil {
				return "", err
			}
			if !cfg.Think {
				return answer, nil
			}
			rationale := advice.Rationale
			if opts.Brief && advice.Brief != "" {
				rationale = advice.Brief
			}
			return "<think>" + rationale + "</think>" + answer, nil
		}
	})
}
