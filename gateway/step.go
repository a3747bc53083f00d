package gateway

import (
	"github.com/agentrl/agentrl/algos"
	"github.com/agentrl/agentrl/rollout"
)

// Step is what one step's episodes left: the scored ones as trajectories,
// grouped by task, and the counts.
type Step struct {
	// Trajectories are the scored episodes, task by task (Group indexes
	// the task, Sample the episode within it), Groups their indices per
	// task (a task whose episodes were all dropped has no group).
	Trajectories []rollout.Trajectory
	Groups       algos.Groups
	// IDs[i] is trajectory i's episode id.
	IDs []string
	// Segments[i] are trajectory i's training sequences: one per segment
	// of requests that extended each other token-exactly.
	Segments [][]rollout.Sequence
	// Episodes counts the step's episodes, Dropped those dropped.
	Episodes, Dropped int
	// Requests counts the recorded model requests, Continued those after
	// an episode's first and Mismatched those among them that began a new
	// segment.
	Requests, Continued, Mismatched int
	// Reasons counts the dropped episodes by reason.
	Reasons map[string]int
}

// Metrics are the step's gateway metrics.
func (s *Step) Metrics() map[string]float64 {
	m := map[string]float64{
		"gateway/episodes":   float64(s.Episodes),
		"gateway/dropped":    float64(s.Dropped),
		"gateway/scored":     float64(len(s.Trajectories)),
		"gateway/requests":   float64(s.Requests),
		"gateway/mismatched": float64(s.Mismatched),
	}
	if s.Continued > 0 {
		m["gateway/history_mismatch"] = float64(s.Mismatched) / float64(s.Continued)
	} else {
		m["gateway/history_mismatch"] = 0
	}
	if s.Episodes > 0 {
		m["gateway/dropped_rate"] = float64(s.Dropped) / float64(s.Episodes)
	}
	return m
}

// collect builds the Step of eps (the closed step's episodes, in task
// order).
func (g *Gateway) collect(eps []*episode) (*Step, error) {
	st := &Step{Episodes: len(eps), Reasons: map[string]int{}}
	group := -1
	task := -1
	for _, e := range eps {
		if e.state == stateDropped {
			st.Dropped++
			st.Reasons[e.why]++
			continue
		}
		tr, segs := e.trajectory()
		turns := 0
		for i, seg := range e.segments {
			turns += len(seg.turns)
			if i > 0 {
				st.Mismatched++
			}
		}
		st.Requests += turns
		st.Continued += turns - 1
		if e.group != task {
			task = e.group
			group++
			st.Groups = append(st.Groups, nil)
		}
		tr.Group = group
		st.Groups[group] = append(st.Groups[group], len(st.Trajectories))
		st.Trajectories = append(st.Trajectories, tr)
		st.Segments = append(st.Segments, segs)
		st.IDs = append(st.IDs, e.id)
	}
	return st, nil
}

// trajectory is the scored episode as a rollout.Trajectory: its segments
// one after another in Tokens, the loss mask over the sampled tokens and
// their log-probs as sampled. With several segments every turn carries
// its exact prompt (Turn.Prompt), as a history window does.
func (e *episode) trajectory() (rollout.Trajectory, []rollout.Sequence) {
	tr := rollout.Trajectory{Group: e.group, Sample: e.sample, Seed: e.task.Seed,
		EnvReturn: e.reward, Score: e.reward, Success: e.success, Done: true}
	segs := make([]rollout.Sequence, len(e.segments))
	for i, s := range e.segments {
		off := len(tr.Tokens)
		tr.Tokens = append(tr.Tokens, s.tokens...)
		tr.LossMask = append(tr.LossMask, s.mask...)
		tr.LogProbs = append(tr.LogProbs, s.logprobs...)
		segs[i] = rollout.Sequence{Tokens: s.tokens, LossMask: s.mask, LogProbs: s.logprobs}
		for _, t := range s.turns {
			turn := rollout.Turn{PromptEnd: off + t.promptEnd, ReplyStart: off + t.replyStart, ReplyEnd: off + t.replyEnd,
				ThinkStart: -1, ThinkEnd: -1, Finish: t.finish, FormatOK: true}
			if len(e.segments) > 1 {
				turn.Prompt = s.tokens[:t.promptEnd]
			}
			tr.Turns = append(tr.Turns, turn)
		}
	}
	tr.Actions = len(tr.Turns)
	tr.ValidActions = tr.Actions
	return tr, segs
}
