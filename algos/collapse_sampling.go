package algos

import (
	"fmt"
	"math/rand/v2"
	"sort"
)

// Pair sampling for the collapse metrics: which (trajectory, turn) pairs
// become the rows of the cross-scoring matrix, and which column each row
// belongs to (RAGEN's CollapseDetector). A turn is valid when its reasoning
// (the text inside <think>…</think>) is non-empty; invalid turns are never
// sampled.
//
// First-turn scheme (collapse_first_turn_sample):
//
//	candidates = trajectories whose first turn is valid
//	if 0 < M < #candidates: draw M of them uniformly without replacement
//	rows = their first turns; columns = the distinct groups among them
//	(ascending group id); col(r) = the column of the row's group
//
// Rows of one group share the prompt (same seed, same first observation).
//
// Trajectory-uniform scheme (collapse_trajectory_sample), Pr(m, t) = 1/M_traj · 1/T_m:
//
//	draws = min(M, Σ_m T_m) (all of Σ_m T_m when M ≤ 0), T_m = valid turns of m
//	each draw: m uniform over all trajectories; if T_m > 0, t uniform over
//	m's valid turns, else the draw yields nothing
//	sampling is with replacement; every sampled pair is its own column
//
// Columns of the trajectory scheme whose prompts are token-identical must be
// made equivalent with ColumnKeys (turn-1 prompts of one group are identical).
// M is num_samples (RAGEN default 64).

// TrajectoryTurns describes one trajectory for pair sampling.
type TrajectoryTurns struct {
	Group int    // env group id (same seed ⇒ same initial prompt)
	Valid []bool // Valid[t]: turn t has non-empty reasoning
}

// Pair is one sampled (trajectory, turn).
type Pair struct {
	Traj int // index into the trajectory list
	Turn int // turn index within the trajectory
}

// PairSample is the result of a sampling scheme.
type PairSample struct {
	Pairs []Pair // the matrix rows, in order
	Col   []int  // Col[r]: column of row r
	// ColPair[j] is a pair whose prompt column j uses (the first row of the
	// column); ColGroup[j] is that pair's group.
	ColPair  []Pair
	ColGroup []int
	// NumTotal and NumValid count the candidate turns before subsampling
	// (first-turn scheme: trajectories and valid first turns; trajectory
	// scheme: all turns and valid turns).
	NumTotal, NumValid int
}

// NumCols is the number of prompt columns.
func (s PairSample) NumCols() int { return len(s.ColPair) }

// SampleFirstTurnPairs is the first-turn scheme; m ≤ 0 keeps all candidates.
func SampleFirstTurnPairs(rng *rand.Rand, trajs []TrajectoryTurns, m int) (PairSample, error) {
	if rng == nil {
		return PairSample{}, fmt.Errorf("algos: nil random source")
	}
	var cand []int
	for i, tr := range trajs {
		if len(tr.Valid) > 0 && tr.Valid[0] {
			cand = append(cand, i)
		}
	}
	s := PairSample{NumTotal: len(trajs), NumValid: len(cand)}
	if m > 0 && m < len(cand) {
		// Partial Fisher–Yates: a uniform m-subset without replacement.
		for i := range m {
			j := i + rng.IntN(len(cand)-i)
			cand[i], cand[j] = cand[j], cand[i]
		}
		cand = cand[:m]
		sort.Ints(cand)
	}
	groupSet := map[int]bool{}
	var groupIDs []int
	for _, i := range cand {
		if !groupSet[trajs[i].Group] {
			groupSet[trajs[i].Group] = true
			groupIDs = append(groupIDs, trajs[i].Group)
		}
	}
	sort.Ints(groupIDs)
	colOf := map[int]int{}
	for j, g := range groupIDs {
		colOf[g] = j
	}
	s.ColPair = make([]Pair, len(groupIDs))
	s.ColGroup = groupIDs
	seen := make([]bool, len(groupIDs))
	for _, i := range cand {
		p := Pair{Traj: i, Turn: 0}
		c := colOf[trajs[i].Group]
		s.Pairs = append(s.Pairs, p)
		s.Col = append(s.Col, c)
		if !seen[c] {
			seen[c] = true
			s.ColPair[c] = p
		}
	}
	return s, nil
}

// SampleTrajectoryPairs is the trajectory-uniform scheme; m ≤ 0 draws as many
// times as there are valid turns.
func SampleTrajectoryPairs(rng *rand.Rand, trajs []TrajectoryTurns, m int) (PairSample, error) {
	if rng == nil {
		return PairSample{}, fmt.Errorf("algos: nil random source")
	}
	valid := make([][]int, len(trajs))
	var s PairSample
	for i, tr := range trajs {
		for t, ok := range tr.Valid {
			if ok {
				valid[i] = append(valid[i], t)
			}
		}
		s.NumTotal += len(tr.Valid)
		s.NumValid += len(valid[i])
	}
	if len(trajs) == 0 {
		return s, nil
	}
	draws := s.NumValid
	if m > 0 {
		draws = min(m, s.NumValid)
	}
	for range draws {
		i := rng.IntN(len(trajs))
		if len(valid[i]) == 0 {
			continue
		}
		p := Pair{Traj: i, Turn: valid[i][rng.IntN(len(valid[i]))]}
		s.Col = append(s.Col, len(s.Pairs))
		s.Pairs = append(s.Pairs, p)
		s.ColPair = append(s.ColPair, p)
		s.ColGroup = append(s.ColGroup, trajs[i].Group)
	}
	return s, nil
}

// ValidThinkingRate is collapse/valid_thinking_rate: valid turns over all
// turns (0 when there are no turns).
func ValidThinkingRate(trajs []TrajectoryTurns) float64 {
	total, valid := 0, 0
	for _, tr := range trajs {
		for _, ok := range tr.Valid {
			total++
			if ok {
				valid++
			}
		}
	}
	if total == 0 {
		return 0
	}
	return float64(valid) / float64(total)
}

// FirstTurnCountMetrics returns collapse/first_turn_num_total,
// collapse/first_turn_num_valid and collapse/first_turn_valid_rate of a
// first-turn sample.
func (s PairSample) FirstTurnCountMetrics() map[string]float64 {
	rate := 0.0
	if s.NumTotal > 0 {
		rate = float64(s.NumValid) / float64(s.NumTotal)
	}
	return map[string]float64{
		"collapse/first_turn_num_total":  float64(s.NumTotal),
		"collapse/first_turn_num_valid":  float64(s.NumValid),
		"collapse/first_turn_valid_rate": rate,
	}
}
