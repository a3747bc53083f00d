package sokoban_test

import (
	"fmt"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/sokoban"
)

// Example generates RAGEN's default level for a seed, asks the expert what
// to do and plays its advice to the end.
func Example() {
	factory, err := envs.NewFactoryYAML("sokoban", []byte("observation_format: grid\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	env, _ := factory.New()
	obs, _ := env.Reset(0)
	fmt.Println(obs)
	res, _ := env.Step("jump") // not an action: nothing changes
	fmt.Println(res.Info.ActionValid, res.Reward)

	advice, _ := env.(envs.Expert).Advise(0, nil)
	fmt.Println(advice.Actions, advice.Rationale)
	total := 0.0
	for _, a := range advice.Actions {
		res, _ = env.Step(a)
		total += res.Reward
		if res.Done {
			fmt.Printf("%s\nsolved=%v return=%.1f\n", res.Observation, res.Info.Success, total)
		}
	}
	_, err = env.Step("Up")
	fmt.Println(err)
	// Output:
	// ######
	// ######
	// ######
	// #P#__#
	// #_X_O#
	// ######
	// false 0
	// [Down Right Right] The player is at (3, 1), the box is at (4, 2) and the target is at (4, 4). Plan: walk to (4, 1), then push the box at (4, 2) right two steps onto the target at (4, 4).
	// ######
	// ######
	// ######
	// #_#__#
	// #__P√#
	// ######
	// solved=true return=10.7
	// envs: Step called after the episode ended
}

// ExampleParseLevel reads an .xsb level and solves it.
func ExampleParseLevel() {
	level, err := sokoban.ParseLevel(`
  #####
###   #
#.@$  #
### $.#
  #####`)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(level)
	moves, _ := sokoban.Solve(level, sokoban.DefaultMaxStates)
	fmt.Println(moves)
	_, err = sokoban.ParseLevel("#####\n#@$ #\n#####")
	fmt.Println(err)
	// Output:
	// #######
	// ###___#
	// #OPX__#
	// ###_XO#
	// #######
	// [Right Up Right Right Down Left Left Left Right Down Right]
	// sokoban level: 1 box but 0 targets; want as many targets as boxes
}
