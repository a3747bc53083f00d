package rollout

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/policy"
)

type chatFunc func(ctx context.Context, msgs []policy.Message, sp policy.Sampling) (string, error)

func (f chatFunc) Chat(ctx context.Context, msgs []policy.Message, sp policy.Sampling) (string, error) {
	return f(ctx, msgs, sp)
}

func TestRunChatMatchesTokenEngine(t *testing.T) {
	const reply = "one step</think><answer>Right</answer>"
	factory, err := envs.NewFactory("rollout-walk", nil)
	if err != nil {
		t.Fatal(err)
	}
	seeds := []uint64{0, 1, 2, 3}
	chat, err := RunChat(context.Background(), DefaultConfig(), chatFunc(func(_ context.Context, msgs []policy.Message, _ policy.Sampling) (string, error) {
		if msgs[len(msgs)-1].Role != policy.RoleUser {
			return "", errors.New("last message is not the user's")
		}
		return reply, nil
	}), factory, seeds)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := newEngine(t, DefaultConfig(), fixedReply(reply)).Run(context.Background(), seeds, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range seeds {
		a, b := chat[i], tok[i]
		if a.Err != "" || a.Score != b.Score || a.Success != b.Success || a.Actions != b.Actions || len(a.Messages) != len(b.Messages) {
			t.Errorf("seed %d: chat %+v\ntoken %+v", seeds[i], a, b)
		}
		for j := range a.Messages {
			if !reflect.DeepEqual(a.Messages[j], b.Messages[j]) {
				t.Errorf("seed %d message %d differs:\n%q\n%q", seeds[i], j, a.Messages[j].Content, b.Messages[j].Content)
			}
		}
	}
}

func TestRunChatRecordsFailures(t *testing.T) {
	factory, _ := envs.NewFactory("rollout-walk", nil)
	calls := 0
	trajs, err := RunChat(context.Background(), DefaultConfig(), chatFunc(func(context.Context, []policy.Message, policy.Sampling) (string, error) {
		calls++
		return "", errors.New("503 from upstream")
	}), factory, []uint64{1})
	if err != nil {
		t.Fatal(err)
	}
	if len(trajs) != 1 || !strings.Contains(trajs[0].Err, "503") || calls != 1 {
		t.Errorf("failure not recorded once: %+v (calls %d)", trajs, calls)
	}
}
