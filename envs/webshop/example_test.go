package webshop_test

import (
	"fmt"

	"github.com/agentrl/agentrl/envs"
	_ "github.com/agentrl/agentrl/envs/webshop"
)

// Example builds the environment by name, as the trainer does, and lets the
// expert shop for one goal.
func Example() {
	factory, err := envs.NewFactoryYAML("webshop", []byte("catalog: 200\nreward: raw\nshow_actions: false\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	env, _ := factory.New()
	obs, _ := env.Reset(1)
	fmt.Println(obs)
	expert := env.(envs.Expert)
	for {
		adv, _ := expert.Advise(1, nil)
		res, _ := env.Step(adv.Actions[0])
		fmt.Println(adv.Actions[0], "->", res.Reward, res.Done)
		if res.Done {
			break
		}
	}
	res, err := env.Step("click[buy now]")
	fmt.Println(res.Done, err)
	// Output:
	// WebShop [SEP] Instruction: [SEP] i would like storage space bar stools with color: black, and count: set of 6, and size: 24 inch, and price lower than 190.00 dollars [SEP] Search
	// search[i would like storage space bar stools] -> 0 false
	// click[B04RHCKL4W] -> 0 false
	// click[black] -> 0 false
	// click[set of 6] -> 0 false
	// click[24 inch] -> 0 false
	// click[buy now] -> 1 true
	// false envs: Step called after the episode ended
}
