package algos

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func TestCollapseByHand(t *testing.T) {
	// Two prompts, one reasoning each.
	//   L_sum  = [[−2, −4], [−6, −3]], |z| = {2, 3}
	//   L_mean = [[−1, −2], [−2, −1]]
	res, err := ComputeCollapse(CollapseInput{
		LSum:         [][]float64{{-2, -4}, {-6, -3}},
		ReasoningLen: []int{2, 3},
		Col:          []int{0, 1},
	})
	mustNil(t, err)
	ln2 := math.Ln2
	// marginal (mean) = logsumexp(−1, −2) − ln 2 = −1 + ln(1 + e^{−1}) − ln 2 for both rows.
	marg := -1 + math.Log(1+math.Exp(-1)) - ln2
	approx(t, "marginal literal", marg, -1.3798854930417224)
	approxSlice(t, "matched", res.Matched, []float64{-1, -1})
	approxSlice(t, "marginal", res.Marginal, []float64{marg, marg})
	approx(t, "mi", res.MIEstimate, -1-marg)
	approx(t, "H(Z|X)", res.ConditionalEntropyEst, 1)
	approx(t, "H(Z)", res.ReasoningEntropyEst, -marg)
	approx(t, "marginal_std", res.MarginalStd, 0)
	approx(t, "mi_zscore", res.MIZScore, (-1-marg)/1e-3)
	// Sequence variants: matched {−2, −3};
	// marginal {−2 + ln(1+e^{−2}) − ln 2, −3 + ln(1+e^{−3}) − ln 2}.
	m0 := -2 + math.Log(1+math.Exp(-2)) - ln2
	m1 := -3 + math.Log(1+math.Exp(-3)) - ln2
	approxSlice(t, "marginal seq", res.MarginalSeq, []float64{m0, m1})
	approx(t, "mi seq", res.MISeqEstimate, -2.5-(m0+m1)/2)
	approx(t, "H seq", res.ConditionalEntropySeqEst, 2.5)
	approx(t, "H(Z) seq", res.ReasoningEntropySeqEst, -(m0+m1)/2)
	approx(t, "marginal_std_seq", res.MarginalStdSeq, math.Abs(m0-m1)/2)
	approx(t, "mi_zscore_seq", res.MIZScoreSeq, res.MISeqEstimate/(math.Abs(m0-m1)/2+1e-3))
	approx(t, "upper bound", res.MIUpperBound, ln2)
	// Both rows rank their own prompt first: accuracy 1, chance 1/2; at k ≥ 2
	// (k_eff = 2 = N) accuracy and chance are 1.
	approxSlice(t, "accuracy", res.RetrievalAccuracy[:], []float64{1, 1, 1, 1})
	approxSlice(t, "chance", res.RetrievalChance[:], []float64{0.5, 1, 1, 1})

	m := res.Metrics(SchemeFirstTurn)
	approx(t, "metric mi", m["collapse_first_turn_sample/mi_estimate"], -1-marg)
	approx(t, "metric above chance", m["collapse_first_turn_sample/retrieval_above_chance"], 0.5)
	approx(t, "metric above chance@2", m["collapse_first_turn_sample/retrieval_above_chance@2"], 0)
	if _, ok := m["collapse_first_turn_sample/mi_zscore_ema"]; ok {
		t.Error("EMA metrics before Update")
	}
	if len(m) != 25 {
		t.Errorf("%d metrics: %v", len(m), m)
	}
}

func TestCollapseTemplateCollapse(t *testing.T) {
	// Every reasoning scores the same under every prompt: the prompt carries
	// no information. 8 rows, 2 per column.
	n, rows := 4, 8
	in := CollapseInput{}
	for r := range rows {
		in.LSum = append(in.LSum, []float64{-3, -3, -3, -3})
		in.ReasoningLen = append(in.ReasoningLen, 1)
		in.Col = append(in.Col, r%n)
	}
	res, err := ComputeCollapse(in)
	mustNil(t, err)
	if math.Abs(res.MIEstimate) > 1e-12 || math.Abs(res.MISeqEstimate) > 1e-12 {
		t.Errorf("MI = %v / %v, want 0", res.MIEstimate, res.MISeqEstimate)
	}
	// Ties rank column 0 first for every row: only rows of column 0 hit, at
	// chance 1/4.
	approx(t, "acc", res.RetrievalAccuracy[0], 0.25)
	approx(t, "chance", res.RetrievalChance[0], 0.25)
	approx(t, "acc@2", res.RetrievalAccuracy[1], 0.5)
	approx(t, "chance@2", res.RetrievalChance[1], 0.5)

	// Identical rows that do vary across columns: still at chance.
	for r := range rows {
		in.LSum[r] = []float64{-1, -2, -3, -4}
	}
	res, err = ComputeCollapse(in)
	mustNil(t, err)
	approx(t, "acc identical rows", res.RetrievalAccuracy[0], res.RetrievalChance[0])
}

func TestCollapsePerfectlyInformative(t *testing.T) {
	// A reasoning is impossible under any prompt but its own: MI = log N.
	n := 4
	in := CollapseInput{}
	for r := range 2 * n {
		row := []float64{-1000, -1000, -1000, -1000}
		row[r%n] = 0
		in.LSum = append(in.LSum, row)
		in.ReasoningLen = append(in.ReasoningLen, 5)
		in.Col = append(in.Col, r%n)
	}
	res, err := ComputeCollapse(in)
	mustNil(t, err)
	approx(t, "mi", res.MIEstimate, math.Log(4))
	approx(t, "mi seq", res.MISeqEstimate, math.Log(4))
	approx(t, "upper", res.MIUpperBound, math.Log(4))
	approxSlice(t, "acc", res.RetrievalAccuracy[:], []float64{1, 1, 1, 1})
	approxSlice(t, "chance", res.RetrievalChance[:], []float64{0.25, 0.5, 1, 1})
	approx(t, "marginal std", res.MarginalStd, 0)
}

func TestCollapseDuplicatePrompts(t *testing.T) {
	// Columns 0 and 1 hold the same prompt tokens.
	keys := ColumnKeys([][]int{{1, 2}, {1, 2}, {3}, {1}})
	if !equalInts(keys, []int{0, 0, 1, 2}) {
		t.Fatalf("keys %v", keys)
	}
	res, err := ComputeCollapse(CollapseInput{
		LSum: [][]float64{
			{-5, -1, -3, -4}, // own column 0; best is column 1, same prompt ⇒ hit
			{-2, -3, -1, -4}, // own column 1; best is 2 ⇒ miss; top-2 {2, 0} ⇒ hit
			{-1, -2, -3, -4}, // own column 2; top-2 {0, 1} ⇒ miss; top-4 ⇒ hit
		},
		ReasoningLen: []int{1, 1, 1},
		Col:          []int{0, 1, 2},
		ColKey:       keys,
	})
	mustNil(t, err)
	approxSlice(t, "acc", res.RetrievalAccuracy[:], []float64{1.0 / 3, 2.0 / 3, 1, 1})
	// Chance: rows 0, 1 have m = 2 of N = 4, row 2 has m = 1.
	//   k=1: (1/2 + 1/2 + 1/4)/3
	//   k=2: 1 − C(N−m,2)/C(4,2): m=2 ⇒ 1 − 1/6, m=1 ⇒ 1 − 3/6
	//   k=4, 8 (k_eff = 4 = N): 1
	approxSlice(t, "chance", res.RetrievalChance[:], []float64{1.25 / 3, (5.0/6 + 5.0/6 + 0.5) / 3, 1, 1})
	// Without the keys the same matrix is scored strictly.
	strict, err := ComputeCollapse(CollapseInput{LSum: [][]float64{{-5, -1, -3, -4}, {-2, -3, -1, -4}, {-1, -2, -3, -4}}, ReasoningLen: []int{1, 1, 1}, Col: []int{0, 1, 2}})
	mustNil(t, err)
	approxSlice(t, "strict acc", strict.RetrievalAccuracy[:], []float64{0, 0, 1, 1})
	approxSlice(t, "strict chance", strict.RetrievalChance[:], []float64{0.25, 0.5, 1, 1})
}

func TestHitChance(t *testing.T) {
	approx(t, "m=1", hitChance(8, 1, 3), 3.0/8)
	approx(t, "m=2 k=2 n=8", hitChance(8, 2, 2), 1-(6.0*5)/(8*7))
	approx(t, "all correct", hitChance(4, 4, 1), 1)
	approx(t, "n−m < k", hitChance(4, 3, 2), 1)
}

func TestCollapseEMA(t *testing.T) {
	e := NewCollapseEMA()
	r1 := CollapseResult{MIEstimate: 1, MISeqEstimate: 2, MarginalStd: 2, MarginalStdSeq: 10}
	e.Update(SchemeFirstTurn, &r1)
	approx(t, "init", r1.MarginalStdEMA, 2)
	approx(t, "zscore ema", r1.MIZScoreEMA, 1/(2+1e-3))
	approx(t, "zscore ema seq", r1.MIZScoreEMASeq, 2/(10+1e-3))
	// Resume from a checkpoint, then a second step: 0.9·2 + 0.1·1 = 1.9.
	data, err := json.Marshal(e)
	mustNil(t, err)
	resumed := CollapseEMA{Decay: CollapseEMADecay}
	mustNil(t, json.Unmarshal(data, &resumed))
	r2 := CollapseResult{MIEstimate: 1, MarginalStd: 1, MarginalStdSeq: 20}
	resumed.Update(SchemeFirstTurn, &r2)
	approx(t, "ema", r2.MarginalStdEMA, 1.9)
	approx(t, "ema seq", r2.MarginalStdEMASeq, 11)
	// Another scheme starts its own EMA.
	r3 := CollapseResult{MarginalStd: 7}
	resumed.Update(SchemeTrajectory, &r3)
	approx(t, "other scheme", r3.MarginalStdEMA, 7)
	if _, ok := r2.Metrics("p")["p/mi_zscore_ema_seq"]; !ok {
		t.Error("EMA metrics missing after Update")
	}
	var zero CollapseEMA // zero value is usable (decay 0 ⇒ last value)
	zero.Update("x", &r3)
	approx(t, "zero value", r3.MarginalStdEMA, 7)
}

func TestCollapseErrors(t *testing.T) {
	good := func() CollapseInput {
		return CollapseInput{LSum: [][]float64{{-1, -2}, {-2, -1}}, ReasoningLen: []int{1, 1}, Col: []int{0, 1}}
	}
	if _, err := ComputeCollapse(CollapseInput{LSum: [][]float64{{-1}}, ReasoningLen: []int{1}, Col: []int{0}}); !errors.Is(err, ErrTooFewColumns) {
		t.Errorf("one column: %v", err)
	}
	for name, mut := range map[string]func(*CollapseInput){
		"no rows":       func(in *CollapseInput) { in.LSum = nil },
		"ragged":        func(in *CollapseInput) { in.LSum[1] = []float64{-1} },
		"NaN":           func(in *CollapseInput) { in.LSum[0][1] = math.NaN() },
		"-Inf":          func(in *CollapseInput) { in.LSum[0][1] = math.Inf(-1) },
		"length 0":      func(in *CollapseInput) { in.ReasoningLen[0] = 0 },
		"lengths count": func(in *CollapseInput) { in.ReasoningLen = []int{1} },
		"col range":     func(in *CollapseInput) { in.Col[1] = 2 },
		"keys count":    func(in *CollapseInput) { in.ColKey = []int{0} },
	} {
		in := good()
		mut(&in)
		_, err := ComputeCollapse(in)
		wantErr(t, name, err)
	}
}

func TestSampleFirstTurnPairs(t *testing.T) {
	trajs := []TrajectoryTurns{
		{Group: 5, Valid: b(1, 1)},
		{Group: 5, Valid: b(0, 1)}, // invalid first turn
		{Group: 2, Valid: b(1)},
		{Group: 9, Valid: nil}, // no turns
		{Group: 2, Valid: b(1, 0, 1)},
	}
	rng := rand.New(rand.NewPCG(1, 1))
	s, err := SampleFirstTurnPairs(rng, trajs, 64)
	mustNil(t, err)
	// All three valid first turns; columns = groups {2, 5} in ascending order.
	if len(s.Pairs) != 3 || s.Pairs[0] != (Pair{0, 0}) || s.Pairs[1] != (Pair{2, 0}) || s.Pairs[2] != (Pair{4, 0}) {
		t.Errorf("pairs %v", s.Pairs)
	}
	if !equalInts(s.Col, []int{1, 0, 0}) || !equalInts(s.ColGroup, []int{2, 5}) || s.NumCols() != 2 {
		t.Errorf("cols %v groups %v", s.Col, s.ColGroup)
	}
	if s.ColPair[0] != (Pair{2, 0}) || s.ColPair[1] != (Pair{0, 0}) {
		t.Errorf("col pairs %v", s.ColPair)
	}
	cm := s.FirstTurnCountMetrics()
	approx(t, "valid rate", cm["collapse/first_turn_valid_rate"], 3.0/5)
	approx(t, "thinking rate", ValidThinkingRate(trajs), 6.0/8)

	// Subsampling: M distinct candidates, uniform, reproducible.
	var many []TrajectoryTurns
	for i := range 40 {
		many = append(many, TrajectoryTurns{Group: i / 5, Valid: b(1)})
	}
	count := make([]int, 40)
	for range 500 {
		s, err := SampleFirstTurnPairs(rng, many, 10)
		mustNil(t, err)
		if len(s.Pairs) != 10 {
			t.Fatalf("%d pairs", len(s.Pairs))
		}
		seen := map[int]bool{}
		for r, p := range s.Pairs {
			if seen[p.Traj] {
				t.Fatalf("trajectory %d drawn twice", p.Traj)
			}
			seen[p.Traj] = true
			count[p.Traj]++
			if s.ColGroup[s.Col[r]] != many[p.Traj].Group {
				t.Fatalf("row %d in the wrong column", r)
			}
		}
	}
	for i, c := range count { // expected 125 each
		if c < 75 || c > 175 {
			t.Errorf("trajectory %d drawn %d times of 500", i, c)
		}
	}
	a, _ := SampleFirstTurnPairs(rand.New(rand.NewPCG(9, 9)), many, 10)
	c, _ := SampleFirstTurnPairs(rand.New(rand.NewPCG(9, 9)), many, 10)
	if len(a.Pairs) != len(c.Pairs) || a.Pairs[3] != c.Pairs[3] {
		t.Error("same seed, different sample")
	}
	_, err = SampleFirstTurnPairs(nil, many, 10)
	wantErr(t, "nil rng", err)
}

func TestSampleTrajectoryPairs(t *testing.T) {
	trajs := []TrajectoryTurns{
		{Group: 0, Valid: b(1)},
		{Group: 0, Valid: b(1, 0, 1, 1)},
		{Group: 1, Valid: b(0, 0)}, // draws landing here yield nothing
	}
	rng := rand.New(rand.NewPCG(3, 3))
	s, err := SampleTrajectoryPairs(rng, trajs, 64)
	mustNil(t, err)
	if s.NumValid != 4 || s.NumTotal != 7 || len(s.Pairs) > 4 {
		t.Fatalf("counts %d/%d, %d pairs", s.NumValid, s.NumTotal, len(s.Pairs))
	}
	// Trajectory-uniform: trajectories 0 and 1 equally likely despite 1 vs 3
	// valid turns; turn 1 of trajectory 1 is never drawn.
	byTraj := make([]int, 3)
	for range 3000 {
		s, err := SampleTrajectoryPairs(rng, trajs, 3)
		mustNil(t, err)
		for r, p := range s.Pairs {
			if s.Col[r] != r || s.ColPair[r] != p || s.ColGroup[r] != trajs[p.Traj].Group {
				t.Fatalf("row %d: own column expected", r)
			}
			if !trajs[p.Traj].Valid[p.Turn] {
				t.Fatalf("invalid turn %v", p)
			}
			byTraj[p.Traj]++
		}
	}
	// 9000 draws, 1/3 each lands in trajectory 0, 1, 2 (the last yields nothing).
	if byTraj[2] != 0 || byTraj[0] < 2700 || byTraj[0] > 3300 || byTraj[1] < 2700 || byTraj[1] > 3300 {
		t.Errorf("trajectory counts %v", byTraj)
	}
	s, _ = SampleTrajectoryPairs(rng, nil, 64)
	if len(s.Pairs) != 0 {
		t.Error("empty input")
	}
}

func TestRationaleJoint(t *testing.T) {
	// Rows: retrieved+right, retrieved+wrong (twice), unretrieved+right,
	// and one unchecked row that must not count.
	retrieved := []bool{true, true, true, false, true}
	right := []bool{true, false, false, true, true}
	checked := []bool{true, true, true, true, false}
	m := RationaleJoint("p", retrieved, right, checked)
	want := map[string]float64{
		"p/retrieved_right": 0.25, "p/retrieved_wrong": 0.5, "p/unretrieved_right": 0.25, "p/unretrieved_wrong": 0,
		"p/rationale_correct": 0.5, "p/retrieval_accuracy_right": 0.5, "p/retrieval_accuracy_wrong": 1,
	}
	if len(m) != len(want) {
		t.Fatalf("got %d metrics %v, want %d", len(m), m, len(want))
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || math.Abs(got-v) > 1e-12 {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if m := RationaleJoint("p", []bool{true}, []bool{true}, []bool{false}); m != nil {
		t.Errorf("nothing checked: got %v, want nil", m)
	}
	// Every chain right: no conditional accuracy among wrong ones.
	if m := RationaleJoint("p", []bool{true, false}, []bool{true, true}, []bool{true, true}); m["p/retrieval_accuracy_right"] != 0.5 {
		t.Errorf("all right: %v", m)
	} else if _, ok := m["p/retrieval_accuracy_wrong"]; ok {
		t.Errorf("all right: retrieval_accuracy_wrong present: %v", m)
	}
}

func TestComputeCollapseRetrievedPerRow(t *testing.T) {
	// Row 0 prefers its own column 0; row 1 prefers column 0 over its own 1.
	res, err := ComputeCollapse(CollapseInput{
		LSum: [][]float64{{-1, -5}, {-1, -3}}, ReasoningLen: []int{1, 1}, Col: []int{0, 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Retrieved[0] || res.Retrieved[1] {
		t.Fatalf("Retrieved = %v, want [true false]", res.Retrieved)
	}
	if res.RetrievalAccuracy[0] != 0.5 {
		t.Fatalf("top-1 accuracy %v, want 0.5", res.RetrievalAccuracy[0])
	}
}
