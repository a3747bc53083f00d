package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/agentrl/agentrl/algos"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/rollout"
)

// CollapseMetrics computes the template-collapse metrics of trajs as one
// collapse step of a training run does (collapse.samples pairs per
// scheme, the first-turn and trajectory schemes as cfg selects), for
// trainer eval: any policy that scores token ids will do, in process or
// served (client/vllm scores through prompt_logprobs), so the collapse of
// any checkpoint or served model can be checked. seed seeds the choice of
// pairs. It also returns the regime the collapse alarm reads from them (a
// first reading: the midpoint thresholds of cfg.Alarm), or "" when the
// trajectories hold too few distinct prompts to tell apart.
func CollapseMetrics(ctx context.Context, p policy.Policy, trajs []rollout.Trajectory, cfg CollapseConfig, seed uint64) (map[string]float64, algos.Regime, error) {
	r, err := readCollapse(ctx, p, trajs, cfg, seed)
	if err != nil {
		return nil, "", err
	}
	m := r.fold(algos.NewCollapseEMA())
	prefix := algos.SchemeFirstTurn
	if !cfg.FirstTurn {
		prefix = algos.SchemeTrajectory
	}
	reading, ok := algos.ReadingFromMetrics(m, prefix)
	if !ok {
		return m, "", nil
	}
	tracker := algos.RegimeTracker{Config: cfg.Alarm.RegimeConfig}
	regime, _ := tracker.Observe(reading)
	return m, regime, nil
}

// collapseReading is one step's template-collapse measurement, before the
// run's cross-step EMA folds it in.
type collapseReading struct {
	// metrics are the metrics that do not depend on earlier steps.
	metrics map[string]float64
	// schemes are the collapse results of each sampling scheme measured,
	// in order.
	schemes []schemeResult
	// matrices are the cross-scoring matrices behind them, for the run
	// directory (collapseFile).
	matrices []collapseMatrix
}

// collapseMatrix is one scheme's cross-scoring of a collapse reading as the
// run directory keeps it (transcripts/collapse-stepNNNNN.json), for
// viewers: every sampled reasoning chain (a row) scored under every
// sampled prompt (a column).
type collapseMatrix struct {
	Scheme string `json:"scheme"`
	// LSum[r][j] is the log-probability of row r's reasoning under column
	// j's prompt (summed over its tokens); Col[r] is the column of row r's
	// own prompt, and Retrieved[r] whether it scores best there.
	LSum      [][]jsonFloat `json:"lsum"`
	Col       []int         `json:"col"`
	Retrieved []bool        `json:"retrieved"`
	// ReasoningLen[r] is row r's number of reasoning tokens.
	ReasoningLen []int          `json:"reasoning_len"`
	Rows         []collapseRow  `json:"rows"`
	Columns      []collapseCell `json:"columns"`
	// Metrics are the scheme's collapse metrics of this reading (MI,
	// retrieval accuracy, conditional entropy, …; before the cross-step
	// EMA), non-finite values left out.
	Metrics map[string]float64 `json:"metrics"`
}

// jsonFloat is a float that JSON writes as null when it is not finite
// (JSON has no NaN or infinity).
type jsonFloat float64

// MarshalJSON implements json.Marshaler.
func (f jsonFloat) MarshalJSON() ([]byte, error) {
	if v := float64(f); math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

// collapseRow is a row's reasoning chain and where it comes from.
type collapseRow struct {
	Group  int    `json:"group"`
	Sample int    `json:"sample"`
	Turn   int    `json:"turn"`
	Text   string `json:"text"`
}

// collapseCell is a column's prompt: the user message of that turn.
type collapseCell struct {
	Group int    `json:"group"`
	Turn  int    `json:"turn"`
	Text  string `json:"text"`
}

// newCollapseMatrix records a scheme's reading.
func newCollapseMatrix(name string, in algos.CollapseInput, res algos.CollapseResult, ps algos.PairSample, trajs []rollout.Trajectory) collapseMatrix {
	m := collapseMatrix{Scheme: name, Col: in.Col, Retrieved: res.Retrieved, ReasoningLen: in.ReasoningLen,
		Metrics: map[string]float64{}}
	for _, row := range in.LSum {
		out := make([]jsonFloat, len(row))
		for j, v := range row {
			out[j] = jsonFloat(v)
		}
		m.LSum = append(m.LSum, out)
	}
	for _, pr := range ps.Pairs {
		tr := &trajs[pr.Traj]
		text := tr.Turns[pr.Turn].Reply
		if before, _, ok := strings.Cut(text, "</think>"); ok {
			text = strings.TrimPrefix(before, "<think>")
		}
		m.Rows = append(m.Rows, collapseRow{Group: tr.Group, Sample: tr.Sample, Turn: pr.Turn, Text: text})
	}
	for _, pr := range ps.ColPair {
		tr := &trajs[pr.Traj]
		m.Columns = append(m.Columns, collapseCell{Group: tr.Group, Turn: pr.Turn, Text: userMessage(tr, pr.Turn)})
	}
	for k, v := range res.Metrics(name) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			m.Metrics[k] = v
		}
	}
	return m
}

// userMessage is the text of the user message a trajectory's turn answered.
func userMessage(tr *rollout.Trajectory, turn int) string {
	k := 0
	for _, msg := range tr.Messages {
		if msg.Role != policy.RoleUser {
			continue
		}
		if k == turn {
			return msg.Content
		}
		k++
	}
	return ""
}

type schemeResult struct {
	name string
	res  algos.CollapseResult
}

// fold feeds the reading's results to the cross-step EMA (in scheme
// order) and returns all of the step's collapse metrics.
func (r collapseReading) fold(ema *algos.CollapseEMA) map[string]float64 {
	m := maps.Clone(r.metrics)
	for _, sr := range r.schemes {
		res := sr.res
		ema.Update(sr.name, &res)
		maps.Copy(m, res.Metrics(sr.name))
	}
	return m
}

// readCollapse measures template collapse (the mutual information between
// prompts and reasoning) on the unfiltered batch: reasoning chains Z (the
// tokens strictly between <think> and </think>) scored under every sampled
// prompt X (the conversation up to and including the turn's <think>), by
// the current policy, with the token ids the policy produced. seed seeds
// the choice of pairs.
func readCollapse(ctx context.Context, p policy.Policy, trajs []rollout.Trajectory, cfg CollapseConfig, seed uint64) (collapseReading, error) {
	rng := rand.New(rand.NewPCG(seed, 0))
	start := time.Now()
	turns := make([]algos.TrajectoryTurns, len(trajs))
	for i, tr := range trajs {
		turns[i].Group = tr.Group
		for _, turn := range tr.Turns {
			turns[i].Valid = append(turns[i].Valid, tr.Err == "" && turn.HasThink())
		}
	}
	metrics := map[string]float64{"collapse/valid_thinking_rate": algos.ValidThinkingRate(turns)}
	var schemes []schemeResult
	var matrices []collapseMatrix
	type scheme struct {
		name   string
		on     bool
		sample func(*rand.Rand, []algos.TrajectoryTurns, int) (algos.PairSample, error)
	}
	for _, s := range []scheme{
		{algos.SchemeFirstTurn, cfg.FirstTurn, algos.SampleFirstTurnPairs},
		{algos.SchemeTrajectory, cfg.Trajectory, algos.SampleTrajectoryPairs},
	} {
		if !s.on {
			continue
		}
		schemeStart := time.Now()
		ps, err := s.sample(rng, turns, cfg.Samples)
		if err != nil {
			return collapseReading{}, err
		}
		if s.name == algos.SchemeFirstTurn {
			for k, v := range ps.FirstTurnCountMetrics() {
				metrics[k] = v
			}
		}
		if ps.NumCols() < 2 {
			continue // nothing to tell apart
		}
		prompt := func(pr algos.Pair) []int { return trajs[pr.Traj].TurnPrompt(pr.Turn) }
		// A long prompt followed by a long chain can exceed the context:
		// every prompt keeps at most its last (context - longest chain)
		// tokens, the part that holds the current state.
		longest := 0
		for _, pr := range ps.Pairs {
			turn := trajs[pr.Traj].Turns[pr.Turn]
			longest = max(longest, turn.ThinkEnd-turn.ThinkStart)
		}
		limit := p.Info().MaxContext - longest
		prompts := make([][]int, ps.NumCols())
		for j, pr := range ps.ColPair {
			prompts[j] = prompt(pr)
			if limit > 0 && len(prompts[j]) > limit {
				prompts[j] = prompts[j][len(prompts[j])-limit:]
			}
		}
		// Column-major requests: consecutive requests share a prompt, which
		// an in-process policy scores from one cached prompt pass.
		var reqs []policy.ScoreRequest
		for j := range prompts {
			for _, pr := range ps.Pairs {
				turn := trajs[pr.Traj].Turns[pr.Turn]
				reqs = append(reqs, policy.ScoreRequest{Prompt: prompts[j], Continuation: trajs[pr.Traj].Tokens[turn.ThinkStart:turn.ThinkEnd]})
			}
		}
		scores, err := p.Score(ctx, reqs)
		if err != nil {
			return collapseReading{}, err
		}
		rows := len(ps.Pairs)
		in := algos.CollapseInput{LSum: make([][]float64, rows), ReasoningLen: make([]int, rows), Col: ps.Col, ColKey: algos.ColumnKeys(prompts)}
		for r, pr := range ps.Pairs {
			turn := trajs[pr.Traj].Turns[pr.Turn]
			in.ReasoningLen[r] = turn.ThinkEnd - turn.ThinkStart
			in.LSum[r] = make([]float64, len(prompts))
			for j := range prompts {
				var sum float64
				for _, lp := range scores[j*rows+r] {
					sum += lp
				}
				in.LSum[r][j] = sum
			}
		}
		res, err := algos.ComputeCollapse(in)
		if errors.Is(err, algos.ErrTooFewColumns) {
			continue
		} else if err != nil {
			return collapseReading{}, err
		}
		schemes = append(schemes, schemeResult{s.name, res})
		matrices = append(matrices, newCollapseMatrix(s.name, in, res, ps, trajs))
		right, checked := make([]bool, rows), make([]bool, rows)
		for r, pr := range ps.Pairs {
			right[r], checked[r] = trajs[pr.Traj].Turns[pr.Turn].RationaleRight()
		}
		for k, v := range algos.RationaleJoint(s.name, res.Retrieved, right, checked) {
			metrics[k] = v
		}
		metrics["timing_s/"+s.name] = time.Since(schemeStart).Seconds()
	}
	metrics["timing_s/collapse_total"] = time.Since(start).Seconds()
	return collapseReading{metrics: metrics, schemes: schemes, matrices: matrices}, nil
}

// collapseAlarm feeds the step's collapse metrics to the regime
// classifier tracker, logs and shows every change of regime with the
// statistics and a sample transcript, and returns why the run stops when
// the regime entered is one collapse.alarm.stop_on names ("" otherwise).
func (s *session) collapseAlarm(step int, cm map[string]float64, trajs []rollout.Trajectory, tracker *algos.RegimeTracker, m metrics) string {
	a := s.cfg.Collapse.Alarm
	if !a.Enabled {
		return ""
	}
	prefix := algos.SchemeFirstTurn
	if !s.cfg.Collapse.FirstTurn {
		prefix = algos.SchemeTrajectory
	}
	r, ok := algos.ReadingFromMetrics(cm, prefix)
	if !ok {
		return "" // too few distinct prompts this step to tell anything apart
	}
	prev := tracker.Regime
	regime, changed := tracker.Observe(r)
	m.add(tracker.Metrics(r))
	m["collapse/regime_changed"] = 0
	if !changed {
		return ""
	}
	m["collapse/regime_changed"] = 1
	sample := ""
	for _, tr := range trajs {
		if tr.Err == "" && len(tr.Turns) > 0 && tr.Turns[0].HasThink() {
			sample = tr.Turns[0].Reply
			break
		}
	}
	from := string(prev)
	if from == "" {
		from = "none"
	}
	attrs := []any{"step", step, "from", from, "to", string(regime), "input_dependence", r.Dependence(),
		"mi", r.MI, "mi_upper", r.MIUpper, "retrieval", r.Retrieval, "chance", r.Chance, "entropy", r.Entropy, "sample_reply", sample}
	if regime.Collapsed() {
		s.log.Warn("collapse alarm: reasoning regime changed", attrs...)
	} else {
		s.log.Info("reasoning regime", attrs...)
	}
	fmt.Fprintf(s.console, "step %d  regime %s -> %s  (input dependence %.2f, H(Z|X) %.3f nats/token)  e.g. %q\n",
		step, from, regime, r.Dependence(), r.Entropy, sample)
	for _, stop := range a.StopOn {
		if algos.Regime(stop) == regime {
			return fmt.Sprintf("collapse alarm: the reasoning regime became %s at step %d", regime, step)
		}
	}
	return ""
}
