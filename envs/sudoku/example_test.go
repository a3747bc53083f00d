package sudoku_test

import (
	"fmt"

	"github.com/agentrl/agentrl/envs"
	_ "github.com/agentrl/agentrl/envs/sudoku" // registers "sudoku"
)

// Example builds the environment by name, loads a puzzle, asks the expert
// for two placements and makes them.
func Example() {
	factory, err := envs.NewFactoryYAML("sudoku", []byte("show_candidates: true\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	env, _ := factory.New()
	obs, err := env.(envs.LevelLoader).LoadLevel("1...\n.4..\n...3\n4321")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(obs)
	advice, _ := env.(envs.Expert).Advise(2, nil)
	fmt.Println(advice.Brief)
	fmt.Println(advice.Rationale)
	for _, a := range advice.Actions {
		res, _ := env.Step(a)
		fmt.Println(a, res.Reward)
	}
	// Output:
	// Row 1: 1 . | . .
	// Row 2: . 4 | . .
	// Row 3: . . | . 3
	// Row 4: 4 3 | 2 1
	// Empty: (1,2):2 (1,3):3,4 (1,4):2,4 (2,1):2,3 (2,3):1,3 (2,4):2 (3,1):2 (3,2):1,2 (3,3):4
	// (1,2)=2 (1,4)=4
	// Row 1 has 1, column 2 has 3, 4 and the box has 1, 4, so only 2 fits at (1,2).
	// place 2 at row 1 col 2 1
	// place 4 at row 1 col 4 1
}
