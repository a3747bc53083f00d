package rollout

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrl/agentrl/envs"
)

// ErrNoRandomPolicy is returned by RunRandom for an environment with
// neither an action vocabulary nor an envs.RandomActor (free-form programs,
// for instance): a random baseline would mean nothing there.
var ErrNoRandomPolicy = errors.New("the environment has no random policy")

// RunRandom plays one episode per seed with a uniformly random valid-action
// policy, the baseline a learned policy is measured against, with the same
// prompts, parsing, penalties and limits as Engine.Run. Each turn answers
// with MaxActionsPerTurn actions drawn from the environment's RandomActor,
// or uniformly from its vocabulary for the current state, and an empty
// rationale. seed drives the draws. It fails with ErrNoRandomPolicy (and
// plays nothing) when the environment offers neither.
func RunRandom(ctx context.Context, cfg Config, factory *envs.Factory, seeds []uint64, seed uint64) ([]Trajectory, error) {
	if len(seeds) == 0 {
		return nil, nil
	}
	// The vocabulary may depend on the level (the bandit's arm names), so
	// the probe looks at a started episode.
	probe, err := factory.New()
	if err != nil {
		return nil, err
	}
	defer closeEnv(probe)
	if _, err := probe.Reset(seeds[0]); err != nil {
		return nil, err
	}
	if _, ok := probe.(envs.RandomActor); !ok && len(probe.Actions()) == 0 {
		return nil, fmt.Errorf("%w (%s)", ErrNoRandomPolicy, factory.Name())
	}
	return runText(ctx, cfg, factory, seeds, func(i int, ep *episode) replyFunc {
		rng := envs.NewRand(mixSeed(seed, seeds[i]), 0x7a4d)
		return func(context.Context, int) (string, error) {
			actions := make([]string, cfg.MaxActionsPerTurn)
			for j := range actions {
				if ra, ok := ep.env.(envs.RandomActor); ok {
					a, err := ra.RandomAction(rng)
					if err != nil {
						return "", fmt.Errorf("random action: %w", err)
					}
					actions[j] = a
					continue
				}
				vocab := ep.env.Actions()
				if len(vocab) == 0 {
					return "", fmt.Errorf("%w (%s)", ErrNoRandomPolicy, factory.Name())
				}
				actions[j] = vocab[rng.IntN(len(vocab))]
			}
			answer, err := answerText(&cfg, ep, actions)
			if err != nil {
				return "", err
			}
			if cfg.Think {
				return "<think></think>" + answer, nil
			}
			return answer, nil
		}
	})
}
