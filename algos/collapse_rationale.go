package algos

// RationaleJoint crosses the per-row top-1 retrieval hit of a collapse
// matrix (CollapseResult.Retrieved) with the ground truth of each row's
// reasoning (right: it stated every checked fact correctly; checked: the
// environment checked it). MI and retrieval only see whether reasoning
// depends on its input; this says how much of the input-dependent
// reasoning is also true:
//
//	retrieved_right    P(retrieved ∧ right)
//	retrieved_wrong    P(retrieved ∧ wrong)   input-dependent but wrong
//	unretrieved_right  P(¬retrieved ∧ right)
//	unretrieved_wrong  P(¬retrieved ∧ wrong)
//	rationale_correct  P(right)
//	retrieval_accuracy_right, retrieval_accuracy_wrong
//	                   P(retrieved | right), P(retrieved | wrong)
//
// over the checked rows, keyed prefix/NAME. Nothing is returned when no row
// was checked; a conditional accuracy is left out when its condition never
// occurs.
func RationaleJoint(prefix string, retrieved, right, checked []bool) map[string]float64 {
	var cell [2][2]float64 // [retrieved][right]
	n := 0.0
	for r := range retrieved {
		if !checked[r] {
			continue
		}
		n++
		cell[b2i(retrieved[r])][b2i(right[r])]++
	}
	if n == 0 {
		return nil
	}
	m := map[string]float64{
		prefix + "/retrieved_right":   cell[1][1] / n,
		prefix + "/retrieved_wrong":   cell[1][0] / n,
		prefix + "/unretrieved_right": cell[0][1] / n,
		prefix + "/unretrieved_wrong": cell[0][0] / n,
		prefix + "/rationale_correct": (cell[1][1] + cell[0][1]) / n,
	}
	if k := cell[1][1] + cell[0][1]; k > 0 {
		m[prefix+"/retrieval_accuracy_right"] = cell[1][1] / k
	}
	if k := cell[1][0] + cell[0][0]; k > 0 {
		m[prefix+"/retrieval_accuracy_wrong"] = cell[1][0] / k
	}
	return m
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
