package train

import (
	"math"
	"slices"

	"github.com/agentrl/agentrl/algos"
	"github.com/agentrl/agentrl/rollout"
)

// Batch is one step's experience as whole groups of trajectories: group g
// is the K samples of one level, at Trajectories[Groups[g][0]],
// Trajectories[Groups[g][1]], …. It is a value: dropping and selecting
// groups return new batches and leave the receiver as it was (the collapse
// metrics and transcripts read the unfiltered one).
type Batch struct {
	Trajectories []rollout.Trajectory
	Groups       algos.Groups
}

// newBatch groups trajectories by their Group field, in order of first
// appearance (the order the rollout engine returns them in).
func newBatch(trajs []rollout.Trajectory) Batch {
	ids := make([]int, len(trajs))
	for i, tr := range trajs {
		ids[i] = tr.Group
	}
	return Batch{Trajectories: trajs, Groups: algos.GroupsByID(ids)}
}

// addGroup appends one group's trajectories, renumbering their Group field
// to the group's index in b (metrics such as pass@K read it).
func (b *Batch) addGroup(members []rollout.Trajectory) {
	g := make([]int, len(members))
	for i, tr := range members {
		g[i] = len(b.Trajectories)
		tr.Group = len(b.Groups)
		b.Trajectories = append(b.Trajectories, tr)
	}
	b.Groups = append(b.Groups, g)
}

// group returns the trajectories of group g.
func (b Batch) group(g int) []rollout.Trajectory {
	out := make([]rollout.Trajectory, len(b.Groups[g]))
	for i, j := range b.Groups[g] {
		out[i] = b.Trajectories[j]
	}
	return out
}

// Scores returns each trajectory's score (what advantages and filters use).
func (b Batch) Scores() []float64 {
	s := make([]float64, len(b.Trajectories))
	for i, tr := range b.Trajectories {
		s[i] = tr.Score
	}
	return s
}

// WithoutFailedGroups returns the batch without the groups in which any
// trajectory failed (a policy or environment error): their reward spread
// would come from a partial group. It also reports how many it dropped.
func (b Batch) WithoutFailedGroups() (Batch, int) {
	var ok []int
	for g, members := range b.Groups {
		if !slices.ContainsFunc(members, func(i int) bool { return b.Trajectories[i].Err != "" }) {
			ok = append(ok, g)
		}
	}
	return b.Select(ok), len(b.Groups) - len(ok)
}

// Select returns the batch of the given groups, in that order, with their
// trajectories contiguous and renumbered.
func (b Batch) Select(groups []int) Batch {
	var out Batch
	for _, g := range groups {
		out.addGroup(b.group(g))
	}
	return out
}

// Sequences returns the batch in the learner's form.
func (b Batch) Sequences() *Sequences {
	s := &Sequences{Turns: make([][]algos.Turn, len(b.Trajectories))}
	for i := range b.Trajectories {
		tr := &b.Trajectories[i]
		first := len(s.Tokens)
		for _, seq := range tr.Sequences() {
			s.Episode = append(s.Episode, i)
			s.Tokens = append(s.Tokens, seq.Tokens)
			s.Mask = append(s.Mask, seq.LossMask)
			s.OldLogProb = append(s.OldLogProb, seq.LogProbs)
		}
		s.Turns[i] = creditTurns(tr, first, len(tr.Turns) > 0 && tr.Turns[0].Prompt != nil)
	}
	return s
}

// creditTurns describes a trajectory's turns for turn-level credit: with a
// history window turn k is sequence first+k after its prompt, otherwise
// the reply span of the one sequence first.
func creditTurns(tr *rollout.Trajectory, first int, windowed bool) []algos.Turn {
	out := make([]algos.Turn, len(tr.Turns))
	for k, turn := range tr.Turns {
		t := algos.Turn{Seq: first, Start: turn.ReplyStart, End: turn.ReplyEnd,
			Reward: turn.Reward + turn.Penalty, State: turn.State,
			CostBefore: math.NaN(), CostAfter: math.NaN()}
		if windowed {
			t.Seq, t.Start, t.End = first+k, len(turn.Prompt), len(turn.Prompt)+turn.ReplyEnd-turn.ReplyStart
		}
		if turn.Cost != nil {
			t.CostBefore, t.CostAfter = turn.Cost.Before, turn.Cost.After
		}
		out[k] = t
	}
	return out
}

// Sequences are a batch in the learner's form: one token sequence per
// trajectory, or one per turn with a history window. Every per-token
// matrix has Mask's ragged shape. The loop fills the fields in order:
// Batch.Sequences the first four, Learner.Prepare OldValues and RefLogProb
// (and, recomputing, OldLogProb and SamplerLogProb), the advantage
// estimator Advantages and Returns.
type Sequences struct {
	// Episode[i] indexes the batch trajectory sequence i comes from.
	Episode []int
	// Tokens are the token ids as the policy read and wrote them.
	Tokens [][]int
	// Mask is true on the tokens the policy sampled (the trained ones).
	Mask [][]bool
	// OldLogProb holds the behaviour policy's log-probs of the sampled
	// tokens: as the sampler reported them, or, with
	// algo.recompute_old_log_prob, as Learner.Prepare recomputed them under
	// the same weights.
	OldLogProb [][]float64
	// SamplerLogProb keeps the sampler's log-probs when Prepare replaced
	// OldLogProb with the learner's (the train–inference mismatch compares
	// the two); nil otherwise.
	SamplerLogProb [][]float64

	// OldValues are the critic's values under the weights that sampled
	// the batch (GAE); nil without a critic.
	OldValues [][]float64
	// RefLogProb are the frozen reference policy's log-probs (KL terms);
	// nil without a reference.
	RefLogProb [][]float64

	// Turns describe each trajectory's turns over these sequences, for
	// turn-level credit (algos.AdvantageInput.Turns).
	Turns [][]algos.Turn

	// Advantages and Returns (the critic's targets) from algos.
	Advantages, Returns [][]float64
}

// Len is the number of sequences.
func (s *Sequences) Len() int { return len(s.Tokens) }

// Subset returns the sequences at idx (a mini-batch), sharing rows.
func (s *Sequences) Subset(idx []int) *Sequences {
	pick := func(x [][]float64) [][]float64 {
		if x == nil {
			return nil
		}
		out := make([][]float64, len(idx))
		for i, j := range idx {
			out[i] = x[j]
		}
		return out
	}
	out := &Sequences{OldLogProb: pick(s.OldLogProb), SamplerLogProb: pick(s.SamplerLogProb), OldValues: pick(s.OldValues),
		RefLogProb: pick(s.RefLogProb), Advantages: pick(s.Advantages), Returns: pick(s.Returns)}
	for _, j := range idx {
		if s.Episode != nil {
			out.Episode = append(out.Episode, s.Episode[j])
		}
		out.Tokens = append(out.Tokens, s.Tokens[j])
		out.Mask = append(out.Mask, s.Mask[j])
	}
	return out
}
