package search_test

import (
	"fmt"

	"github.com/agentrl/agentrl/envs"
	_ "github.com/agentrl/agentrl/envs/search"
)

// Example builds the environment by name, as the trainer does, and lets the
// expert answer a three-hop question.
func Example() {
	factory, err := envs.NewFactoryYAML("search", []byte("top_k: 3\nshow_actions: false\nmin_hops: 3\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	env, _ := factory.New()
	obs, _ := env.Reset(0)
	fmt.Println(obs)
	expert := env.(envs.Expert)
	for {
		adv, _ := expert.Advise(1, nil)
		res, _ := env.Step(adv.Actions[0])
		fmt.Printf("<think>%s</think> %s -> reward %v, done %v\n", adv.Brief, adv.Actions[0], res.Reward, res.Done)
		if res.Done {
			fmt.Println(res.Observation)
			break
		}
		fmt.Println(res.Observation)
	}
	// Output:
	// Question: What is the capital of the country where Nuku Semeth was born?
	// <think>birthplace</think> search[Nuku Semeth] -> reward 0, done false
	// Question: What is the capital of the country where Nuku Semeth was born?
	// Results for "Nuku Semeth":
	// [1] Nuku Semeth was born in Koko in 1839 and worked as a lawyer.
	// [2] In 1886, Nuku Semeth moved to New Raimram.
	// [3] In 1883, Nuku Semeth became chairman of Grainbror Railways.
	// <think>birthplace Koko</think> search[Koko] -> reward 0, done false
	// Question: What is the capital of the country where Nuku Semeth was born?
	// Results for "Koko":
	// [1] Koko is a harbour town in Shomistan.
	// [2] In 1901, Dafa Borka moved to Koko.
	// [3] In 1848, Somtru Nelo moved to Koko.
	// <think>country Shomistan</think> search[Shomistan] -> reward 0, done false
	// Question: What is the capital of the country where Nuku Semeth was born?
	// Results for "Shomistan":
	// [1] Shomistan is a country whose capital city is West Rindsim.
	// [2] Shomistan shares a border with Ridothara.
	// [3] Souzes lies in Shomistan.
	// <think>capital West Rindsim</think> answer[West Rindsim] -> reward 1, done true
	// Question: What is the capital of the country where Nuku Semeth was born?
	// Results for "Shomistan":
	// [1] Shomistan is a country whose capital city is West Rindsim.
	// [2] Shomistan shares a border with Ridothara.
	// [3] Souzes lies in Shomistan.
	// Your answer: West Rindsim. Reward: 1.00
}
