package rollout

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/policy"
)

// ChatModel is a text-level chat endpoint, such as any OpenAI-compatible
// server reached through a generic client. It is enough to evaluate a model
// but not to train it: there are no token ids or log-probs.
type ChatModel interface {
	// Chat returns the assistant's reply to messages.
	Chat(ctx context.Context, messages []policy.Message, sampling policy.Sampling) (string, error)
}

// RunChat plays one episode per seed against a chat model, with the same
// prompts, parsing, penalties and limits as Engine.Run. The returned
// trajectories carry Messages and Turns (with Reply, actions and rewards)
// but no tokens. The error is non-nil only when ctx ends.
func RunChat(ctx context.Context, cfg Config, model ChatModel, factory *envs.Factory, seeds []uint64) ([]Trajectory, error) {
	return runText(ctx, cfg, factory, seeds, func(i int, ep *episode) replyFunc {
		return func(ctx context.Context, turn int) (string, error) {
			sp := cfg.Sampling
			sp.Seed = mixSeed(seeds[i], uint64(turn))
			reply, err := model.Chat(ctx, ep.window(cfg.HistoryWindow), sp)
			if err != nil {
				return "", fmt.Errorf("chat: %w", err)
			}
			return reply, nil
		}
	})
}

// replyFunc writes the reply of one turn of a text-level episode.
type replyFunc func(ctx context.Context, turn int) (string, error)

// runText plays one text-level episode per seed, each with the replies of
// the function replies returns for it.
func runText(ctx context.Context, cfg Config, factory *envs.Factory, seeds []uint64, replies func(i int, ep *episode) replyFunc) ([]Trajectory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("rollout config: %w", err)
	}
	tools, err := newToolMode(&cfg, nil)
	if err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, factory: factory, tools: tools}
	eps := make([]*episode, len(seeds))
	for i, seed := range seeds {
		eps[i] = &episode{traj: Trajectory{Group: i, Seed: seed}}
	}
	e.parallel(ctx, eps, func(i int, ep *episode) { e.playText(ctx, ep, replies(i, ep)) })
	return finishAll(ctx, eps)
}

// playText plays one episode whose replies are text from reply (a chat
// model, an expert), with the engine's prompts, parsing and limits.
func (e *Engine) playText(ctx context.Context, ep *episode, reply replyFunc) {
	if err := open(ctx, &e.cfg, e.factory, ep, e.tools); err != nil {
		ep.traj.Err = err.Error()
		return
	}
	for turn := 1; turn <= e.cfg.MaxTurns && !ep.finished; turn++ {
		sctx, cancel := context.WithTimeout(ctx, e.cfg.SampleTimeout)
		reply, err := reply(sctx, turn)
		cancel()
		if err != nil {
			ep.traj.Err = fmt.Sprintf("turn %d: %v", turn, err)
			return
		}
		// A chat endpoint cannot be handed the opening "<think>" as the start
		// of its reply, so a reply that begins inside the reasoning gets it back.
		if e.cfg.Think && !strings.Contains(reply, "<think>") && strings.Contains(reply, "</think>") {
			reply = "<think>" + reply
		}
		tr := Turn{Reply: reply, ThinkStart: -1, ThinkEnd: -1}
		msg, parsed, calls := e.readReply(ep, turn, reply)
		ep.traj.Messages = append(ep.traj.Messages, msg)
		if err := act(ctx, &e.cfg, ep, parsed, &tr); err != nil {
			ep.traj.Err = fmt.Sprintf("turn %d: %v", turn, err)
			return
		}
		if ep.actionsLeft == 0 {
			ep.finished = true
		}
		if !ep.finished && turn < e.cfg.MaxTurns {
			ep.traj.Messages = append(ep.traj.Messages, e.nextMessages(ep, turn, calls)...)
		}
	}
}

// window returns the messages the model sees: all of them, or with a
// history window of k, the system message (if any) and the last k turns.
func (ep *episode) window(k int) []policy.Message {
	msgs := ep.traj.Messages
	if k <= 0 {
		return msgs
	}
	var head []policy.Message
	if len(msgs) > 0 && msgs[0].Role == policy.RoleSystem {
		head, msgs = msgs[:1], msgs[1:]
	}
	// msgs alternates user, assistant, ..., user; keep the last 2k-1.
	if n := 2*k - 1; len(msgs) > n {
		msgs = msgs[len(msgs)-n:]
	}
	return append(append([]policy.Message(nil), head...), msgs...)
}
