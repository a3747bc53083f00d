package rollout_test

import (
	"context"
	"fmt"

	"github.com/agentrl/agentrl/envs"
	_ "github.com/agentrl/agentrl/envs/builtin" // registers sokoban and the other bundled environments
	"github.com/agentrl/agentrl/policy/policytest"
	"github.com/agentrl/agentrl/rollout"
)

// Example plays three Sokoban levels, two samples each, against a scripted
// policy that always pushes up. It shows the engine's three calls: an
// environment factory from the registry, rollout.New with a policy, and
// Engine.Run with the levels' seeds, the group size and a sampling seed.
// Trajectories come back group by group; rollout.Metrics summarises them
// under RAGEN's metric names.
func Example() {
	ctx := context.Background()

	// The environment: Sokoban's default 6×6 room with one box. The seed
	// given to Run picks the level.
	factory, err := envs.NewFactoryYAML("sokoban", []byte("dim_x: 6\ndim_y: 6\nnum_boxes: 1\n"))
	if err != nil {
		fmt.Println(err)
		return
	}

	// The policy: any policy.Policy (the embedded model, a vLLM server);
	// here a scripted one. The engine's prompt already ends with <think>,
	// so a reply continues the reasoning, then gives its actions.
	pol := &policytest.Scripted{Reply: func(prompt string, seed uint64) string {
		return "push the box up</think><answer>Up || Up</answer>"
	}}

	// RAGEN's rollout settings: up to 5 turns, 2 actions a turn, 10 an episode.
	engine, err := rollout.New(ctx, rollout.DefaultConfig(), pol, factory)
	if err != nil {
		fmt.Println(err)
		return
	}

	// Three groups (levels 5, 7 and 1), two samples each.
	trajs, err := engine.Run(ctx, []uint64{5, 7, 1}, 2, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, tr := range trajs {
		fmt.Printf("level %d, sample %d: turns %d, actions %d, score %.1f, success %v\n",
			tr.Seed, tr.Sample, len(tr.Turns), tr.Actions, tr.Score, tr.Success)
	}

	m := rollout.Metrics("val", trajs, 2)
	fmt.Printf("success %.2f, pass@2 %.2f, turns per episode %.2f, valid replies %.2f\n",
		m["val/success"], m["val/pass@2"], m["val/num_turns"], m["val/format_ok"])
	// Output:
	// level 5, sample 0: turns 1, actions 1, score 10.9, success true
	// level 5, sample 1: turns 1, actions 1, score 10.9, success true
	// level 7, sample 0: turns 1, actions 2, score 10.8, success true
	// level 7, sample 1: turns 1, actions 2, score 10.8, success true
	// level 1, sample 0: turns 5, actions 10, score -1.0, success false
	// level 1, sample 1: turns 5, actions 10, score -1.0, success false
	// success 0.67, pass@2 0.67, turns per episode 2.33, valid replies 1.00
}
