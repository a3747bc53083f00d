package rollout

import "github.com/agentrl/agentrl/policy"

// Trajectory is one played episode, ready for training: the whole
// conversation as the token ids the policy saw and produced, which of them
// the policy sampled, and what happened in every turn.
type Trajectory struct {
	// Group indexes the env group (one seed, K samples); Sample indexes the
	// sample within its group.
	Group, Sample int
	// Seed is the environment seed shared by the group.
	Seed uint64
	// Policy names the policy that sampled the replies: its Info().Name
	// when Engine.Run started (a served policy's model or LoRA adapter,
	// which names the weights' version). PolicyVersion is the version of
	// those weights as the caller counts them (the trainer: the number of
	// completed training steps they hold, 0 for the starting weights);
	// the engine leaves it 0.
	Policy        string
	PolicyVersion int

	// Tokens is the conversation: system prompt, every user turn and every
	// reply, exactly as tokenized and sampled.
	Tokens []int
	// LossMask is true on the tokens the policy sampled.
	LossMask []bool
	// LogProbs holds, where LossMask is true, the behaviour policy's
	// log-probability of the token (0 elsewhere).
	LogProbs []float64

	// Turns describe each reply.
	Turns []Turn
	// Messages is the conversation as text, for transcripts.
	Messages []policy.Message

	// EnvReturn is the sum of environment rewards; Penalty the sum of
	// format penalties; Score = EnvReturn + Penalty is what advantages and
	// filters use (RAGEN's trajectory score).
	EnvReturn, Penalty, Score float64
	// Success is the environment's success flag at the end.
	Success bool
	// Done reports that the environment ended the episode (rather than the
	// turn or action limits).
	Done bool
	// Actions counts the environment steps taken; ValidActions and
	// EffectiveActions how many were valid and changed the state.
	Actions, ValidActions, EffectiveActions int
	// EnvMetrics averages the numeric Info.Metrics over valid steps.
	EnvMetrics map[string]float64
	// Err, when not empty, says why the episode could not be played to the
	// end (a policy or environment failure). Such a trajectory holds what
	// was played before the failure and must not be trained on.
	Err string
	// EnvRetries counts the environment calls retried on a fresh instance
	// (Config.EnvRetries), whether or not they then succeeded.
	EnvRetries int
	// RerenderDrift measures what rendering the whole conversation again
	// would have changed: the number of tokens from the first position
	// where a fresh rendering of Messages differs from Tokens to the end
	// of the longer of the two (0: the template renders the conversation
	// as it was played). RerenderChecked says it was measured (not for a
	// failed episode, nor one played as text). The prompts themselves
	// never re-render: they extend the tokens sampled.
	RerenderDrift   int
	RerenderChecked bool
}

// Turn is one model reply and its effect.
type Turn struct {
	// PromptEnd is the length of the prompt of this turn: the reply was
	// sampled after Tokens[:PromptEnd]. The prompt ends with "<think>" when
	// thinking is on.
	PromptEnd int
	// Prompt, set only when a history window limits what the model saw,
	// holds the exact prompt of this turn (the window), which then differs
	// from Tokens[:PromptEnd]. See Trajectory.TurnPrompt.
	Prompt []int
	// ReplyStart and ReplyEnd delimit the sampled reply in Tokens.
	ReplyStart, ReplyEnd int
	// ThinkStart and ThinkEnd delimit the reasoning tokens, strictly
	// between <think> and </think>; both are -1 when the reply had none.
	ThinkStart, ThinkEnd int
	// Reply is the decoded reply (with the prompt's "<think>" prepended).
	Reply string
	// FormatOK reports that the reply parsed.
	FormatOK bool
	// Actions are the parsed actions; Executed how many of them ran.
	Actions  []string
	Executed int
	// Invalid counts actions the environment did not accept.
	Invalid int
	// Reward is the sum of environment rewards of this turn; Penalty the
	// format penalty charged to it.
	Reward, Penalty float64
	// Finish is the policy's finish reason for the reply.
	Finish string
	// State names the environment state the turn started from: the
	// environment's envs.StateKeyer key, or its rendered observation;
	// empty unless Config.TurnStates is set. Turns of one level with equal
	// States started from the same state (GiGPO's anchor states).
	State string
	// Rationale says, for each fact about the state the environment can
	// check (envs.RationaleChecker: the player, the boxes, …), whether the
	// reply's reasoning stated it correctly; nil when the reply had no
	// parsed reasoning or the environment checks none.
	Rationale map[string]bool
	// Cost is the environment's exact cost-to-go around the turn; nil
	// unless Config.CostToGo is set and the environment's solver answered
	// both before and after.
	Cost *TurnCost
}

// TurnCost is the cost-to-go (envs.Solver: actions left to solve the
// task) before and after a turn's actions, +Inf once unsolvable.
type TurnCost struct {
	Before, After float64
}

// HasThink reports whether the turn has a non-empty reasoning span.
func (t Turn) HasThink() bool { return t.ThinkStart >= 0 && t.ThinkEnd > t.ThinkStart }

// RationaleRight tells whether the turn's reasoning stated every fact the
// environment checked correctly; checked is false when nothing was checked.
func (t Turn) RationaleRight() (right, checked bool) {
	if t.Rationale == nil {
		return false, false
	}
	for _, ok := range t.Rationale {
		if !ok {
			return false, true
		}
	}
	return true, true
}

// TurnPrompt returns the tokens turn i's reply was sampled after: the
// conversation so far, or the history window when one was used.
func (t *Trajectory) TurnPrompt(i int) []int {
	if p := t.Turns[i].Prompt; p != nil {
		return p
	}
	return t.Tokens[:t.Turns[i].PromptEnd]
}

// Sequence is one training sequence: token ids, which of them the policy
// sampled, and their behaviour log-probs.
type Sequence struct {
	Tokens   []int
	LossMask []bool
	LogProbs []float64
}

// Sequences returns the training sequences of the trajectory: the whole
// conversation as one sequence, or with a history window, one sequence per
// turn (that turn's prompt and reply; the mask covers the reply only), as
// the model saw them.
func (t *Trajectory) Sequences() []Sequence {
	windowed := len(t.Turns) > 0 && t.Turns[0].Prompt != nil
	if !windowed {
		return []Sequence{{Tokens: t.Tokens, LossMask: t.LossMask, LogProbs: t.LogProbs}}
	}
	out := make([]Sequence, len(t.Turns))
	for i, turn := range t.Turns {
		reply := t.Tokens[turn.ReplyStart:turn.ReplyEnd]
		n := len(turn.Prompt) + len(reply)
		seq := Sequence{Tokens: make([]int, 0, n), LossMask: make([]bool, n), LogProbs: make([]float64, n)}
		seq.Tokens = append(append(seq.Tokens, turn.Prompt...), reply...)
		for j := range reply {
			seq.LossMask[len(turn.Prompt)+j] = true
			seq.LogProbs[len(turn.Prompt)+j] = t.LogProbs[turn.ReplyStart+j]
		}
		out[i] = seq
	}
	return out
}
