package view

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakeRun describes a synthetic run directory.
type fakeRun struct {
	steps    int               // rows for steps 0..steps
	extra    int               // further metrics per row, to reach a real run's width
	config   map[string]string // the identity's settings
	finished bool              // write summary.json
	episodes int               // episodes per transcript (every 10 steps), 0: none
}

// write writes the run directory dir: metrics.jsonl (training metrics
// every step, validation success and the collapse alarm every 10),
// run.json, config.yaml, and as asked summary.json, transcripts with
// their token ids and a tokenizer-free checkpoint, and a collapse reading.
func (f fakeRun) write(t testing.TB, dir string) {
	t.Helper()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, transcripts), 0o755))
	seed := 1.0
	fmt.Sscan(f.config["run.seed"], &seed)
	var b []byte
	for s := 0; s <= f.steps; s++ {
		x := float64(s) / float64(max(f.steps, 1))
		b = fmt.Appendf(b, `{"step":%d`, s)
		num := func(k string, v float64) { b = strconv.AppendFloat(fmt.Appendf(b, `,%q:`, k), v, 'g', -1, 64) }
		if s > 0 {
			num("train/success", 0.5+0.4*x+0.02*math.Sin(float64(s)*seed))
			num("actor/entropy", 0.1*math.Exp(-3*x))
			b = append(b, `,"train/score":null`...) // a non-finite value
			for k := range f.extra {
				num(fmt.Sprintf("extra/metric_%03d", k), float64(k)+x)
			}
		}
		if s%10 == 0 {
			regime, changed := 2.0, 0.0
			if s == 0 || s == 30 {
				changed = 1
			}
			if s >= 30 {
				regime = 3
			}
			num("val-env/success", 0.6+0.3*x)
			num("collapse/regime", regime)
			num("collapse/regime_changed", changed)
			if s == 0 {
				num("val-env/random_success", 0.17)
			}
		}
		b = append(b, "}\n"...)
	}
	must(os.WriteFile(filepath.Join(dir, "metrics.jsonl"), b, 0o644))
	id, err := json.Marshal(map[string]any{"format": 1, "env": "sokoban", "config": f.config})
	must(err)
	must(os.WriteFile(filepath.Join(dir, identityFile), id, 0o644))
	must(os.WriteFile(filepath.Join(dir, configFile), fmt.Appendf(nil, "run:\n  steps: %d\nenv:\n  name: sokoban\nvalidation:\n  levels: 64\n  samples: 2\n", f.steps), 0o644))
	if f.finished {
		sum := fmt.Sprintf(`{"status":"finished","steps":%d,"wall_time_s":100,"warm_start_time_s":20,"validation_levels":64,"validation_samples":2,
"random":{"step":0,"success":0.17,"ci_low":0.11,"ci_high":0.25},"warm_start":{"step":0,"success":0.6,"ci_low":0.51,"ci_high":0.68},
"best":{"step":%d,"success":0.9,"ci_low":0.84,"ci_high":0.94},"final":{"step":%d,"success":0.9,"ci_low":0.84,"ci_high":0.94},
"failed_groups":0,"run_dir":%q,"checkpoint":%q}`, f.steps, f.steps, f.steps, dir, filepath.Join(dir, "checkpoints", "latest"))
		must(os.WriteFile(filepath.Join(dir, summaryFile), []byte(sum), 0o644))
	}
	if f.episodes == 0 {
		return
	}
	for s := 0; s <= f.steps; s += 10 {
		var txt, toks strings.Builder
		for e := range f.episodes {
			fmt.Fprintf(&txt, "=== group %d sample %d seed %d: score %.2f success %v actions 2 policy sokoban version %d\n", e/4, e%4, 100+e, 9.8, e%2 == 0, s)
			fmt.Fprintf(&txt, "--- system\nYou play Sokoban.\n--- user\nTurn 1, 10 actions left.\nboard %d\n--- assistant\n<think>push right</think><answer>Right</answer>\n", e)
			fmt.Fprintf(&txt, "--- user\nReward: -0.1\nTurn 2, 9 actions left.\n--- assistant\n<think>ok é</think><answer>Up</answer>\n\n")
			fmt.Fprintf(&toks, `{"group":%d,"sample":%d,"seed":%d,"policy_version":%d,"turns":[`+
				`{"prompt":[1,2,3],"reply":[104,105],"logprobs":[-0.1,null],"advantage":[0.5,0.5],"old_logprob":[-0.12,-0.3]},`+
				`{"prompt":[4,5],"reply":[195,169,33],"logprobs":[-1,-0.5,-2]}],"kept":%v,"rerender_drift":0}`+"\n", e/4, e%4, 100+e, s, e < 4)
		}
		base := filepath.Join(dir, transcripts, fmt.Sprintf("train-step%05d", s))
		must(os.WriteFile(base+".txt", []byte(txt.String()), 0o644))
		must(os.WriteFile(base+".tokens.jsonl", []byte(toks.String()), 0o644))
	}
	must(os.WriteFile(collapseFile(dir, 10), []byte(`{"step":10,"matrices":[{"scheme":"collapse_first_turn_sample",
"lsum":[[-1,-5,null],[-4,-0.5,-6],[-3,-3,-0.2]],"col":[0,1,2],"retrieved":[true,true,true],"reasoning_len":[4,4,5],
"rows":[{"group":0,"sample":0,"turn":0,"text":"P1,1"},{"group":1,"sample":0,"turn":0,"text":"P2,2"},{"group":2,"sample":0,"turn":0,"text":"P3,3"}],
"columns":[{"group":0,"turn":0,"text":"board a"},{"group":1,"turn":0,"text":"board b"},{"group":2,"turn":0,"text":"board c"}],
"metrics":{"collapse_first_turn_sample/mi_estimate":0.9,"collapse_first_turn_sample/retrieval_accuracy":1}}]}`), 0o644))
}
