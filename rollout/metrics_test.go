package rollout

import (
	"math"
	"testing"
)

func TestMetrics(t *testing.T) {
	trajs := []Trajectory{
		{Group: 0, Success: true, Score: 10.8, EnvReturn: 10.8, Actions: 2, ValidActions: 2, EffectiveActions: 2,
			Turns: []Turn{{FormatOK: true, ReplyStart: 10, ReplyEnd: 30}}, EnvMetrics: map[string]float64{"boxes_on_target": 1}},
		{Group: 0, Score: -0.6, EnvReturn: -0.5, Penalty: -0.1, Actions: 4, ValidActions: 3, EffectiveActions: 2,
			Turns: []Turn{{FormatOK: true, ReplyStart: 10, ReplyEnd: 20}, {FormatOK: false, ReplyStart: 40, ReplyEnd: 50}}},
		{Group: 1, Score: 0, Err: "boom"},
		{Group: 1, Score: 0},
	}
	m := Metrics("train", trajs, 2)
	want := map[string]float64{
		"train/success":             0.25,
		"train/score":               (10.8 - 0.6) / 4,
		"train/env_return":          (10.8 - 0.5) / 4,
		"train/format_penalty":      -0.1 / 4,
		"train/num_actions":         6.0 / 4,
		"train/action_is_valid":     (1 + 0.75) / 4,
		"train/action_is_effective": (1 + 0.5) / 4,
		"train/failed":              1,
		"train/format_ok":           2.0 / 3,
		"train/response_length":     40.0 / 3,
		"train/num_turns":           3.0 / 4,
		"train/pass@2":              0.5,
		"train/env/boxes_on_target": 1,
	}
	for k, v := range want {
		if math.Abs(m[k]-v) > 1e-12 {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	if len(m) != len(want) {
		t.Errorf("got %d metrics, want %d: %v", len(m), len(want), m)
	}
}
