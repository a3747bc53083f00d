package game2048_test

import (
	"fmt"

	"github.com/agentrl/agentrl/envs"
	_ "github.com/agentrl/agentrl/envs/game2048" // registers "2048"
)

// Example builds the environment by name, loads a board, asks the expert
// for a move and plays it.
func Example() {
	factory, err := envs.NewFactoryYAML("2048", []byte("observation_format: grid\ntarget: 128\nreward: raw\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	env, _ := factory.New()
	obs, err := env.(envs.LevelLoader).LoadLevel("64 32 8 8\n4 2 . .\n2 . . .\n. . . .")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(obs)
	advice, _ := env.(envs.Expert).Advise(1, nil)
	fmt.Println(advice.Actions, advice.Brief)
	res, _ := env.Step(advice.Actions[0])
	fmt.Println(res.Reward, res.Done, res.Info.Success)
	// Output:
	// Score 0. Moves: Right, Down, Left.
	// 64 32 8 8
	// 4 2 . .
	// 2 . . .
	// . . . .
	// [Left] 64 at 1,1; Left merges 8
	// 16 false false
}
