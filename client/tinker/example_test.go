package tinker_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/agentrl/agentrl/client/tinker"
	"github.com/agentrl/agentrl/policy"
)

// Example trains a LoRA model for one step and samples from the new
// weights: create_model, forward_backward and optim_step pipelined,
// save_weights_for_sampler, then a Sampler (a policy.Policy) on the saved
// weights. A scripted fake stands in for the server; in production
// BaseURL points at a Tinker API server and APIKey holds the key.
func Example() {
	fake := newFake()
	srv := httptest.NewServer(fake)
	defer srv.Close()

	ctx := context.Background()
	c, err := tinker.NewClient(ctx, tinker.Options{BaseURL: srv.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	m, err := c.CreateModel(ctx, "Qwen/Qwen3-8B", tinker.LoraConfig{Rank: 32})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("model:", m.ID())

	// One datum: the model reads tokens 0..T-1 and predicts 1..T.
	tokens := []int{72, 101, 108, 108, 111}
	batch := tinker.ForwardBackwardInput{
		Data: []tinker.Datum{{
			ModelInput: tinker.TokensInput(tokens[:len(tokens)-1]),
			LossFnInputs: map[string]tinker.TensorData{
				tinker.InputTargetTokens: tinker.Ints(tokens[1:]),
				tinker.InputWeights:      tinker.Floats([]float64{1, 1, 1, 1}),
			},
		}},
		LossFn: tinker.LossCrossEntropy,
	}
	// Submit both, then wait: the server runs them back to back.
	fb, err := m.ForwardBackwardAsync(ctx, batch)
	if err != nil {
		fmt.Println(err)
		return
	}
	step, err := m.OptimStepAsync(ctx, tinker.DefaultAdam(1e-4))
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := fb.Wait(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := step.Wait(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("loss: %.2f\n", out.Metrics["loss:sum"])

	path, err := m.SaveWeightsForSampler(ctx, "step-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("weights:", path)

	// The Tinker API has no tokenizer: the chat template and tokenizer
	// come from a local policy of the same model.
	s := tinker.NewSampler(c, fake.local, tinker.SamplerTarget{ModelPath: path})
	prompt, err := s.RenderChat(ctx, []policy.Message{{Role: policy.RoleUser, Content: "Hi"}}, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	samples, err := s.Sample(ctx, []policy.Request{{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1, MaxTokens: 16, Seed: 42}}})
	if err != nil || samples[0].Err != nil {
		fmt.Println(err, samples[0].Err)
		return
	}
	text, _ := s.Decode(ctx, samples[0].Tokens)
	fmt.Printf("sample: %q (%s)\n", text, samples[0].Finish)
	fmt.Println("policy version:", s.Info().Name)

	// Output:
	// model: session_1:train:0
	// loss: 4.88
	// weights: tinker://session_1:train:0/sampler_weights/step-1
	// sample: "ok 42<|end|>" (stop)
	// policy version: tinker://session_1:train:0/sampler_weights/step-1
}
