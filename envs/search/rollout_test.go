package search_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
	_ "github.com/agentrl/agentrl/envs/search"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/rollout"
)

// toolConfig is configs/search.yaml's rollout with tools in the compact
// form.
func toolConfig() rollout.Config {
	cfg := rollout.DefaultConfig()
	cfg.MaxTurns, cfg.MaxActionsPerTurn, cfg.MaxActionsPerEpisode = 5, 1, 5
	cfg.PromptStyle, cfg.FormatPenalty = rollout.PromptCompact, 0
	cfg.Tools, cfg.ToolFormat = true, rollout.ToolsCompact
	cfg.Concurrency = 2
	return cfg
}

// TestPlayedThroughTools plays the expert's demonstrations and the random
// baseline with tools on, as the warm start and the baseline do: the
// tools are described in the first prompt, every reply is a compact call,
// every call is answered with its result, and the expert answers every
// question.
func TestPlayedThroughTools(t *testing.T) {
	factory, err := envs.NewFactoryYAML("search", []byte("top_k: 3\nmax_steps: 5\nshow_actions: false\ntools: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	seeds := []uint64{0, 1, 2, 3, 4, 5, 6, 7}
	demos, err := rollout.Demonstrate(context.Background(), toolConfig(), factory, seeds, rollout.DemoOptions{Brief: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range demos {
		if tr.Err != "" || !tr.Success || tr.EnvReturn != 1 {
			t.Fatalf("seed %d: err %q, success %v, return %v", tr.Seed, tr.Err, tr.Success, tr.EnvReturn)
		}
		first := tr.Messages[0].Content
		if !strings.Contains(first, `search: Search the documents`) || !strings.Contains(first, `"required":["query"]`) {
			t.Errorf("seed %d: the tools are not described: %q", tr.Seed, first)
		}
		for i, turn := range tr.Turns {
			if !turn.FormatOK || turn.Executed != 1 || turn.Invalid != 0 || !strings.Contains(turn.Reply, "</think><call>") {
				t.Errorf("seed %d turn %d: %+v", tr.Seed, i, turn)
			}
		}
		last := tr.Messages[len(tr.Messages)-1]
		if last.Role != policy.RoleAssistant || !strings.Contains(last.Content, `<call>answer {"text":`) {
			t.Errorf("seed %d: the last message is %+v", tr.Seed, last)
		}
		for _, m := range tr.Messages[2:] {
			if m.Role == policy.RoleUser && !strings.HasPrefix(m.Content, "Result of search:\nQuestion: ") {
				t.Errorf("seed %d: a call is answered by %q", tr.Seed, m.Content)
			}
		}
	}
	random, err := rollout.RunRandom(context.Background(), toolConfig(), factory, seeds, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range random {
		if tr.Err != "" || tr.Actions == 0 || tr.ValidActions != tr.Actions {
			t.Errorf("random, seed %d: err %q, %d actions, %d valid", tr.Seed, tr.Err, tr.Actions, tr.ValidActions)
		}
	}
}
