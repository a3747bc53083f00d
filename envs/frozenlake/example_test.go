package frozenlake_test

import (
	"fmt"

	"github.com/agentrl/agentrl/envs"
	_ "github.com/agentrl/agentrl/envs/frozenlake" // registers "frozenlake"
)

// Example builds the environment by name, loads Gymnasium's classic 4x4 map,
// asks the expert for a plan and follows it.
func Example() {
	factory, err := envs.NewFactoryYAML("frozenlake", []byte("observation_format: grid\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	env, _ := factory.New()
	obs, err := env.(envs.LevelLoader).LoadLevel("SFFF\nFHFH\nFFFH\nHFFG")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(obs)

	advice, _ := env.(envs.Expert).Advise(0, nil)
	fmt.Println(advice.Actions)
	fmt.Println(advice.Rationale)

	var res envs.StepResult
	for _, a := range advice.Actions {
		res, _ = env.Step(a)
	}
	fmt.Println(res.Observation)
	fmt.Println(res.Reward, res.Done, res.Info.Success)
	// Output:
	// P___
	// _O_O
	// ___O
	// O__G
	// [Down Down Right Down Right Right]
	// I am at (0, 0) and the goal is at (3, 3). The shortest safe route is Down x2, Right, Down, Right x2 (6 moves); holes at (1, 1), (2, 3), (3, 0) border it.
	// ____
	// _O_O
	// ___O
	// O__√
	// 1 true true
}
