package codeexec_test

import (
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/envs"
	_ "github.com/agentrl/agentrl/envs/codeexec"
)

// Example runs one episode: a wrong first attempt, its feedback, and a
// corrected second attempt.
func Example() {
	factory, err := envs.NewFactoryYAML("codeexec", []byte("tasks: [rotate]\ndifficulty: easy\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	env, _ := factory.New()
	obs, _ := env.Reset(7)
	fmt.Println(obs)

	// Seed 7 asks for a left rotation by 2; this attempt rotates by 3. the rotation wraps around on short lists.
	res, _ := env.Step("```python\ndef rotate_left(xs):\n    return xs[3:] + xs[:3]\n```")
	fmt.Printf("reward %.3f done %v\n", res.Reward, res.Done)
	_, feedback, _ := strings.Cut(res.Observation, "Attempts left: 2 of 3.\n")
	fmt.Println(feedback)

	advice, _ := env.(envs.Expert).Advise(1, nil)
	res, _ = env.Step(advice.Actions[0])
	fmt.Printf("reward %.3f done %v success %v\n", res.Reward, res.Done, res.Info.Success)
	// Output:
	// Task: write def rotate_left(xs):
	// Return a new list with the elements of xs rotated left by 2 positions (the first 2 elements move to the other end, in order). Rotating wraps around when 2 is larger than len(xs); an empty list gives an empty list.
	// Examples:
	//   rotate_left([20, 10, -18, -4]) == [-18, -4, 20, 10]
	//   rotate_left([-4, -18, -7, -17, 0, 19]) == [-7, -17, 0, 19, -4, -18]
	// Attempts left: 3 of 3.
	// reward 0.600 done false
	// Attempt 1: 3/5 tests passed.
	// Failed: rotate_left([20, 10, -18, -4]) expected [-18, -4, 20, 10], got [-4, 20, 10, -18]
	// Failed: rotate_left([-4, -18, -7, -17, 0, 19]) expected [-7, -17, 0, 19, -4, -18], got [-17, 0, 19, -4, -18, -7]
	// Fix the program and submit the complete function again.
	// reward 0.400 done true success true
}
