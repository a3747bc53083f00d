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
// With perturb > 0 each demonstrated action is, with that probability,
// replaced by an action drawn uniformly from the vocabulary (the rationale
// is kept), which makes the demonstrations, and a model imitating them,
// clearly worse than the expert. Randomness comes from seed.
func Demonstrate(ctx context.Context, cfg Config, factory *envs.Factory, seeds []uint64, perturb float64, seed uint64) ([]Trajectory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("rollout config: %w", err)
	}
	e := &Engine{cfg: cfg, factory: factory}
	eps := make([]*episode, len(seeds))
	for i, s := range seeds {
		eps[i] = &episode{traj: Trajectory{Group: i, Seed: s}}
	}
	e.parallel(ctx, eps, func(i int, ep *episode) {
		rng := envs.NewRand(mixSeed(seed, seeds[i]), 0xde40)
		e.playText(ctx, ep, func(context.Context, int) (string, error) {
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
					if rng.Float64() < perturb {
						actions[j] = vocab[rng.IntN(len(vocab))]
					}
				}
			}
			answer := "<answer>" + strings.Join(actions, " "+cfg.ActionSeparator+" ") + "</answer>"
			if !cfg.Think {
				return answer, nil
			}
			return "<think>" + advice.Rationale + "</think>" + answer, nil
		})
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]Trajectory, len(eps))
	for i, ep := range eps {
		out[i] = ep.finish()
	}
	return out, nil
}
