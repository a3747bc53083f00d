package rollout

import "fmt"

// Metrics summarises trajectories under prefix with RAGEN's metric names:
// prefix/success, /score, /env_return, /format_penalty, /num_actions,
// /action_is_valid, /action_is_effective, /failed, /format_ok,
// /response_length (tokens per reply), /num_turns, /pass@K (K = groupSize > 1)
// and prefix/env/KEY for every numeric Info metric of the environment; where
// the environment checks rationales, prefix/rationale_correct (the share of
// checked reasoning that stated every fact right) and
// prefix/rationale_correct/FACT.
func Metrics(prefix string, trajs []Trajectory, groupSize int) map[string]float64 {
	m := map[string]float64{}
	if len(trajs) == 0 {
		return m
	}
	var success, score, envRet, pen, actions, valid, effective, formatOK, turns, respLen, failed, retries float64
	var drifted, driftTokens, driftMeasured float64
	envSums := map[string]float64{}
	envCounts := map[string]float64{}
	groupSuccess := map[int]bool{}
	var checked, allRight float64
	factRight := map[string]float64{}
	for _, tr := range trajs {
		if tr.Err != "" {
			failed++
		}
		retries += float64(tr.EnvRetries)
		if tr.RerenderChecked {
			driftMeasured++
			driftTokens += float64(tr.RerenderDrift)
			if tr.RerenderDrift > 0 {
				drifted++
			}
		}
		if tr.Success {
			success++
			groupSuccess[tr.Group] = true
		}
		score += tr.Score
		envRet += tr.EnvReturn
		pen += tr.Penalty
		actions += float64(tr.Actions)
		if tr.Actions > 0 {
			valid += float64(tr.ValidActions) / float64(tr.Actions)
			effective += float64(tr.EffectiveActions) / float64(tr.Actions)
		}
		for _, turn := range tr.Turns {
			turns++
			if turn.FormatOK {
				formatOK++
			}
			respLen += float64(turn.ReplyEnd - turn.ReplyStart)
			if right, ok := turn.RationaleRight(); ok {
				checked++
				for fact, ok := range turn.Rationale {
					factRight[fact] += 0 // a fact never right is still reported, as 0
					if ok {
						factRight[fact]++
					}
				}
				if right {
					allRight++
				}
			}
		}
		for k, v := range tr.EnvMetrics {
			envSums[k] += v
			envCounts[k]++
		}
	}
	n := float64(len(trajs))
	m[prefix+"/success"] = success / n
	m[prefix+"/score"] = score / n
	m[prefix+"/env_return"] = envRet / n
	m[prefix+"/format_penalty"] = pen / n
	m[prefix+"/num_actions"] = actions / n
	m[prefix+"/action_is_valid"] = valid / n
	m[prefix+"/action_is_effective"] = effective / n
	m[prefix+"/failed"] = failed
	if driftMeasured > 0 {
		m[prefix+"/rerender_drift"] = drifted / driftMeasured
		m[prefix+"/rerender_drift_tokens"] = driftTokens / driftMeasured
	}
	if retries > 0 {
		m[prefix+"/env_retries"] = retries // only where there were any
	}
	if turns > 0 {
		m[prefix+"/format_ok"] = formatOK / turns
		m[prefix+"/response_length"] = respLen / turns
		m[prefix+"/num_turns"] = turns / n
	}
	if checked > 0 {
		m[prefix+"/rationale_correct"] = allRight / checked
		for fact, n := range factRight {
			m[prefix+"/rationale_correct/"+fact] = n / checked
		}
	}
	if groupSize > 1 {
		groups := map[int]bool{}
		for _, tr := range trajs {
			groups[tr.Group] = true
		}
		m[fmt.Sprintf("%s/pass@%d", prefix, groupSize)] = float64(len(groupSuccess)) / float64(len(groups))
	}
	for k, v := range envSums {
		m[prefix+"/env/"+k] = v / envCounts[k]
	}
	return m
}
