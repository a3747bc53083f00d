package chattemplate

// Python's conversions of numbers, for the int, float and round filters.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// num is v as a float, for a number (or bool).
func num(v any) (float64, bool) {
	_, f, _, ok := number(v)
	return f, ok
}

// pyInt converts v as Jinja2's int filter does: a string in base (or,
// failing that, as a float), a bool, or a number truncated.
func pyInt(v any, base int64) (int64, bool) {
	switch v := v.(type) {
	case string:
		s := strings.TrimFunc(v, isPySpace)
		t := strings.ReplaceAll(s, "_", "")
		if base == 10 || base == 0 {
			if i, err := strconv.ParseInt(t, 10, 64); err == nil && validUnderscores(s) {
				return i, true
			}
		} else if i, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimPrefix(strings.ToLower(t), "0x"), "0b"), int(base), 64); err == nil {
			return i, true
		}
		if f, ok := pyFloatParse(v); ok && !math.IsInf(f, 0) && f == f {
			return int64(f), true
		}
		return 0, false
	case bool:
		if v {
			return 1, true
		}
		return 0, true
	case int64:
		return v, true
	case float64:
		if math.IsInf(v, 0) || v != v {
			return 0, false
		}
		return int64(v), true
	}
	return 0, false
}

func validUnderscores(s string) bool {
	return !strings.HasPrefix(s, "_") && !strings.HasSuffix(s, "_") && !strings.Contains(s, "__")
}

// pyFloatParse is Python's float(str).
func pyFloatParse(s string) (float64, bool) {
	s = strings.TrimFunc(s, isPySpace)
	if !validUnderscores(s) {
		return 0, false
	}
	t := strings.ToLower(strings.ReplaceAll(s, "_", ""))
	switch strings.TrimLeft(t, "+-") {
	case "inf", "infinity":
		if strings.HasPrefix(t, "-") {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case "nan":
		return math.NaN(), true
	}
	if strings.ContainsAny(t, "xp") {
		return 0, false
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, true
		}
		return 0, false
	}
	return f, true
}

// roundFloat is Jinja2's round filter.
func roundFloat(v float64, precision int64, how string) (float64, error) {
	switch how {
	case "common":
		if precision == 0 {
			return math.RoundToEven(v), nil
		}
		if math.IsInf(v, 0) || v != v {
			return v, nil
		}
		if precision > 0 {
			f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', int(min(precision, 400)), 64), 64)
			return f, nil
		}
		p := math.Pow(10, float64(-precision))
		return math.RoundToEven(v/p) * p, nil
	case "floor", "ceil":
		p := math.Pow(10, float64(precision))
		if how == "floor" {
			return math.Floor(v*p) / p, nil
		}
		return math.Ceil(v*p) / p, nil
	}
	return 0, fmt.Errorf("method must be common, ceil or floor")
}
