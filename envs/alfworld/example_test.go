package alfworld_test

import (
	"fmt"

	"github.com/agentrl/agentrl/envs"
	_ "github.com/agentrl/agentrl/envs/alfworld" // registers "alfworld"
)

// Example builds the environment by name with the compact observation,
// and lets the expert play one generated task.
func Example() {
	factory, err := envs.NewFactoryYAML("alfworld", []byte("scene: small\nobservation_format: compact\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	env, _ := factory.New()
	obs, _ := env.Reset(2)
	fmt.Println(obs)
	fmt.Println()
	expert := env.(envs.Expert)
	for {
		adv, _ := expert.Advise(1, nil)
		res, _ := env.Step(adv.Actions[0])
		fmt.Printf("%-34s  %s\n", adv.Actions[0], adv.Brief)
		if res.Done {
			fmt.Println(res.Reward, res.Info.Success)
			break
		}
	}
	// Output:
	// Task: heat some cup and put it in fridge.
	// In the middle of the room.
	// Holding: nothing.
	// Unsearched: cabinet 1, coffeemachine 1, countertop 1, diningtable 1, drawer 1, fridge 1, garbagecan 1, microwave 1, sinkbasin 1, stoveburner 1.
	// Actions: none here
	//
	// go to countertop 1                  find cup: countertop 1
	// go to diningtable 1                 find cup: diningtable 1
	// take cup 1 from diningtable 1       cup 1 at diningtable 1
	// go to microwave 1                   heat cup 1: microwave 1
	// heat cup 1 with microwave 1         heat cup 1: microwave 1
	// go to fridge 1                      cup 1 to fridge 1
	// open fridge 1                       cup 1 to fridge 1
	// put cup 1 in/on fridge 1            cup 1 to fridge 1
	// 10 true
}
