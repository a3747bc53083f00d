package algos

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Template-collapse metrics (RAGEN-2; ragen/trainer/collapse_metrics.py and
// docs/reference_mutual_information_metrics.md): how much the reasoning Z
// depends on the prompt X, estimated by in-batch cross-scoring.
//
// Input: L_sum[r][j] = Σ_t log p(z_{r,t} | x_j, z_{r,<t}), the teacher-forced
// log-likelihood of reasoning row r after prompt column j (R rows, N ≥ 2
// columns); |z_r| the reasoning length of row r; col(r) the column of the
// row's own prompt; and an identity key per column (columns whose prompts are
// token-identical share a key). With L_mean[r][j] = L_sum[r][j]/|z_r| and L
// either of them:
//
//	matched_r  = L[r][col(r)]
//	marginal_r = logsumexp_j L[r][j] − log N             log p_mix(z_r), uniform prompt mixture
//	mi_estimate             = mean(matched − marginal)   from L_mean (mi_seq_estimate: L_sum)
//	conditional_entropy_est = −mean(matched)             (… _seq_est from L_sum)
//	reasoning_entropy_est   = −mean(marginal)            (… _seq_est from L_sum)
//	marginal_std            = population std of marginal (… _seq)
//	mi_zscore               = mean((matched − marginal)/(marginal_std + 1e-3))      (… _seq)
//	mi_zscore_ema           = mean((matched − marginal)/(σ_EMA + 1e-3))             (… _seq)
//	    σ_EMA ← 0.9·σ_EMA + 0.1·marginal_std, initialised to the first value, one per scheme
//	mi_upper_bound          = log N
//	matched_log_prob_mean   = mean(matched), marginal_log_prob_mean = mean(marginal)  (L_mean)
//
// Retrieval, on L_mean. Rank the columns of row r by L_mean desc (ties: lower
// column first, as torch.argmax); with k_eff = min(k, N):
//
//	retrieval_accuracy@k  = mean_r 1[some column among the top k_eff has key(col(r))]
//	retrieval_chance_level@k = mean_r P(hit in top k_eff | uniformly random ranking)
//	                      = mean_r [1 − C(N−m_r, k_eff)/C(N, k_eff)],  m_r = #columns with key(col(r))
//	retrieval_above_chance@k = accuracy − chance
//
// for k = 1 (logged without the @1 suffix) and k = 2, 4, 8. At k = 1 the
// chance is mean_r m_r/N, exactly RAGEN's; for k > 1 RAGEN logs
// min(1, k_eff·mean_r m_r/N), which equals the exact value when every prompt
// is distinct (m_r = 1) and overstates it otherwise; this package logs the
// exact probability.
//
// Reading: template collapse drives MI toward 0 and retrieval toward chance
// while the conditional entropy can stay high.

// Collapse constants from RAGEN's collapse_detection defaults.
const (
	CollapseStdEps   = 1e-3 // std_eps
	CollapseEMADecay = 0.9  // ema_decay
)

// The sampling-scheme names, used as metric prefixes and EMA keys.
const (
	SchemeFirstTurn  = "collapse_first_turn_sample"
	SchemeTrajectory = "collapse_trajectory_sample"
)

// ErrTooFewColumns is returned when the matrix has fewer than 2 columns: MI
// and retrieval are meaningless (RAGEN logs nothing for that scheme).
var ErrTooFewColumns = errors.New("algos: collapse metrics need at least 2 prompt columns")

// retrievalKs are the top-k levels reported.
var retrievalKs = [4]int{1, 2, 4, 8}

// CollapseInput is one cross-scoring matrix.
type CollapseInput struct {
	// LSum[r][j] is the summed log-likelihood of reasoning r after prompt j.
	LSum [][]float64
	// ReasoningLen[r] is |z_r| ≥ 1 (empty reasoning must be skipped upstream).
	ReasoningLen []int
	// Col[r] is the column of row r's own prompt.
	Col []int
	// ColKey[j] identifies column j's prompt: equal keys = token-identical
	// prompts. nil means every column is distinct. ColumnKeys builds it from
	// token ids.
	ColKey []int
}

// CollapseResult holds the per-row quantities and the metrics.
type CollapseResult struct {
	N, R int

	Matched, Marginal       []float64 // per row, from L_mean
	MatchedSeq, MarginalSeq []float64 // per row, from L_sum

	MIEstimate, MISeqEstimate                        float64
	MatchedLogProbMean, MarginalLogProbMean          float64
	ConditionalEntropyEst, ReasoningEntropyEst       float64
	ConditionalEntropySeqEst, ReasoningEntropySeqEst float64
	MarginalStd, MarginalStdSeq                      float64
	MIZScore, MIZScoreSeq                            float64
	MIUpperBound                                     float64

	// Retrieved[r]: row r's own prompt ranks first among the columns (ties
	// with token-identical prompts count), the per-row top-1 retrieval hit.
	Retrieved []bool
	// Retrieval at k = 1, 2, 4, 8.
	RetrievalAccuracy [4]float64
	RetrievalChance   [4]float64

	// Filled by CollapseEMA.Update; HasEMA tells whether it ran.
	HasEMA                            bool
	MarginalStdEMA, MarginalStdEMASeq float64
	MIZScoreEMA, MIZScoreEMASeq       float64
}

// ComputeCollapse computes every metric except the EMA ones.
func ComputeCollapse(in CollapseInput) (CollapseResult, error) {
	rows := len(in.LSum)
	if rows == 0 {
		return CollapseResult{}, fmt.Errorf("algos: collapse matrix has no rows")
	}
	n := len(in.LSum[0])
	if n < 2 {
		return CollapseResult{}, ErrTooFewColumns
	}
	if len(in.ReasoningLen) != rows || len(in.Col) != rows {
		return CollapseResult{}, fmt.Errorf("algos: %d matrix rows, %d reasoning lengths, %d columns of origin", rows, len(in.ReasoningLen), len(in.Col))
	}
	if in.ColKey != nil && len(in.ColKey) != n {
		return CollapseResult{}, fmt.Errorf("algos: %d column keys for %d columns", len(in.ColKey), n)
	}
	for r := range rows {
		if len(in.LSum[r]) != n {
			return CollapseResult{}, fmt.Errorf("algos: collapse matrix row %d has %d columns, row 0 has %d", r, len(in.LSum[r]), n)
		}
		if err := checkFinite(fmt.Sprintf("L_sum[%d]", r), in.LSum[r]); err != nil {
			return CollapseResult{}, err
		}
		if in.ReasoningLen[r] < 1 {
			return CollapseResult{}, fmt.Errorf("algos: row %d has reasoning length %d; rows with empty reasoning must be dropped", r, in.ReasoningLen[r])
		}
		if in.Col[r] < 0 || in.Col[r] >= n {
			return CollapseResult{}, fmt.Errorf("algos: row %d has column %d outside 0..%d", r, in.Col[r], n-1)
		}
	}
	key := in.ColKey
	if key == nil {
		key = make([]int, n)
		for j := range key {
			key[j] = j
		}
	}

	res := CollapseResult{N: n, R: rows, MIUpperBound: math.Log(float64(n))}
	res.Matched, res.Marginal = make([]float64, rows), make([]float64, rows)
	res.MatchedSeq, res.MarginalSeq = make([]float64, rows), make([]float64, rows)
	res.Retrieved = make([]bool, rows)
	lmean := make([]float64, n)
	for r := range rows {
		for j := range n {
			lmean[j] = in.LSum[r][j] / float64(in.ReasoningLen[r])
		}
		c := in.Col[r]
		res.Matched[r], res.Marginal[r] = lmean[c], logSumExp(lmean)-res.MIUpperBound
		res.MatchedSeq[r], res.MarginalSeq[r] = in.LSum[r][c], logSumExp(in.LSum[r])-res.MIUpperBound

		order := rankColumns(lmean)
		m := 0
		for j := range n {
			if key[j] == key[c] {
				m++
			}
		}
		for ki, k := range retrievalKs {
			ke := min(k, n)
			for _, j := range order[:ke] {
				if key[j] == key[c] {
					res.RetrievalAccuracy[ki]++
					if ki == 0 {
						res.Retrieved[r] = true
					}
					break
				}
			}
			res.RetrievalChance[ki] += hitChance(n, m, ke)
		}
	}
	for ki := range retrievalKs {
		res.RetrievalAccuracy[ki] /= float64(rows)
		res.RetrievalChance[ki] /= float64(rows)
	}

	res.MatchedLogProbMean, res.MarginalLogProbMean = mean(res.Matched), mean(res.Marginal)
	res.MIEstimate = res.MatchedLogProbMean - res.MarginalLogProbMean
	matchedSeqMean, marginalSeqMean := mean(res.MatchedSeq), mean(res.MarginalSeq)
	res.MISeqEstimate = matchedSeqMean - marginalSeqMean
	res.ConditionalEntropyEst, res.ReasoningEntropyEst = -res.MatchedLogProbMean, -res.MarginalLogProbMean
	res.ConditionalEntropySeqEst, res.ReasoningEntropySeqEst = -matchedSeqMean, -marginalSeqMean
	res.MarginalStd, res.MarginalStdSeq = populationStd(res.Marginal), populationStd(res.MarginalSeq)
	res.MIZScore = res.MIEstimate / (res.MarginalStd + CollapseStdEps)
	res.MIZScoreSeq = res.MISeqEstimate / (res.MarginalStdSeq + CollapseStdEps)
	return res, nil
}

// logSumExp is log Σ exp(x), stable.
func logSumExp(x []float64) float64 {
	hi := math.Inf(-1)
	for _, v := range x {
		hi = math.Max(hi, v)
	}
	s := 0.0
	for _, v := range x {
		s += math.Exp(v - hi)
	}
	return hi + math.Log(s)
}

// rankColumns orders column indices by score desc, ties by index.
func rankColumns(x []float64) []int {
	order := make([]int, len(x))
	for j := range order {
		order[j] = j
	}
	sort.SliceStable(order, func(a, b int) bool { return x[order[a]] > x[order[b]] })
	return order
}

// hitChance is the probability that a uniformly random ranking of n columns,
// m of them correct, has a correct one among its first k:
// 1 − C(n−m, k)/C(n, k) = 1 − Π_{i<k} (n−m−i)/(n−i).
func hitChance(n, m, k int) float64 {
	miss := 1.0
	for i := range k {
		if n-m-i <= 0 {
			return 1
		}
		miss *= float64(n-m-i) / float64(n-i)
	}
	return 1 - miss
}

// CollapseEMA is the cross-step EMA of marginal_std, one value per sampling
// scheme, for L_mean and for L_sum. The averages are JSON-serialisable for
// checkpoints; Decay is a setting, not saved, and comes from the run's
// configuration when it resumes.
type CollapseEMA struct {
	Decay  float64            `json:"-"`
	Std    map[string]float64 `json:"std"`
	StdSeq map[string]float64 `json:"std_seq"`
}

// NewCollapseEMA returns an empty EMA with decay 0.9.
func NewCollapseEMA() *CollapseEMA {
	return &CollapseEMA{Decay: CollapseEMADecay, Std: map[string]float64{}, StdSeq: map[string]float64{}}
}

// Update folds res's marginal stds into the scheme's EMA (the first value
// initialises it) and fills res's EMA fields.
func (e *CollapseEMA) Update(scheme string, res *CollapseResult) {
	if e.Std == nil {
		e.Std = map[string]float64{}
	}
	if e.StdSeq == nil {
		e.StdSeq = map[string]float64{}
	}
	upd := func(store map[string]float64, v float64) float64 {
		if old, ok := store[scheme]; ok {
			store[scheme] = e.Decay*old + (1-e.Decay)*v
		} else {
			store[scheme] = v
		}
		return store[scheme]
	}
	res.MarginalStdEMA = upd(e.Std, res.MarginalStd)
	res.MarginalStdEMASeq = upd(e.StdSeq, res.MarginalStdSeq)
	res.MIZScoreEMA = res.MIEstimate / (res.MarginalStdEMA + CollapseStdEps)
	res.MIZScoreEMASeq = res.MISeqEstimate / (res.MarginalStdEMASeq + CollapseStdEps)
	res.HasEMA = true
}

// Metrics returns the metrics under prefix (normally SchemeFirstTurn or
// SchemeTrajectory): prefix + "/mi_estimate", and so on (see the package
// documentation for the list). The EMA metrics are included only after
// CollapseEMA.Update.
func (res CollapseResult) Metrics(prefix string) map[string]float64 {
	m := map[string]float64{
		"mi_estimate":                 res.MIEstimate,
		"mi_seq_estimate":             res.MISeqEstimate,
		"mi_upper_bound":              res.MIUpperBound,
		"matched_log_prob_mean":       res.MatchedLogProbMean,
		"marginal_log_prob_mean":      res.MarginalLogProbMean,
		"conditional_entropy_est":     res.ConditionalEntropyEst,
		"reasoning_entropy_est":       res.ReasoningEntropyEst,
		"conditional_entropy_seq_est": res.ConditionalEntropySeqEst,
		"reasoning_entropy_seq_est":   res.ReasoningEntropySeqEst,
		"marginal_std":                res.MarginalStd,
		"marginal_std_seq":            res.MarginalStdSeq,
		"mi_zscore":                   res.MIZScore,
		"mi_zscore_seq":               res.MIZScoreSeq,
	}
	for ki, k := range retrievalKs {
		suffix := fmt.Sprintf("@%d", k)
		if k == 1 {
			suffix = ""
		}
		m["retrieval_accuracy"+suffix] = res.RetrievalAccuracy[ki]
		m["retrieval_chance_level"+suffix] = res.RetrievalChance[ki]
		m["retrieval_above_chance"+suffix] = res.RetrievalAccuracy[ki] - res.RetrievalChance[ki]
	}
	if res.HasEMA {
		m["marginal_std_ema"] = res.MarginalStdEMA
		m["marginal_std_ema_seq"] = res.MarginalStdEMASeq
		m["mi_zscore_ema"] = res.MIZScoreEMA
		m["mi_zscore_ema_seq"] = res.MIZScoreEMASeq
	}
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[prefix+"/"+k] = v
	}
	return out
}

// ColumnKeys maps each column's prompt token ids to an identity key:
// token-identical prompts get the same key (numbered by first appearance).
func ColumnKeys(prompts [][]int) []int {
	index := map[string]int{}
	keys := make([]int, len(prompts))
	for j, p := range prompts {
		s := fmt.Sprint(p)
		k, ok := index[s]
		if !ok {
			k = len(index)
			index[s] = k
		}
		keys[j] = k
	}
	return keys
}
