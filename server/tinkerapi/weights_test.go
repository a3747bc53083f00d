package tinkerapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	wire "github.com/agentrl/agentrl/client/tinker"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/text/tokenizer"
)

// TestSaveLoadResumes checks that save_weights and load_weights (with the
// optimizer) carry a run on exactly: a step after the load equals the step
// without it. Without the optimizer, the step starts a fresh AdamW.
func TestSaveLoadResumes(t *testing.T) {
	for _, lc := range []*wire.LoraConfig{fullConfig(), loraConfig()} {
		t.Run(fmt.Sprintf("rank%d", lc.Rank), func(t *testing.T) {
			base := tinyPolicy(t)
			ts := start(t, base, Options{})
			vocab := base.VocabSize()
			first, second := examples(1, 3, 16, vocab), examples(2, 3, 16, vocab)
			a := ts.newModel(t, lc)
			ts.run(t, "forward_backward", fbRequest(a, nil, first), nil)
			ts.run(t, "optim_step", wire.OptimStepRequest{ModelID: a, AdamParams: adam}, nil)
			var sw wire.SaveWeightsResponse
			ts.run(t, "save_weights", wire.SaveWeightsRequest{ModelID: a, Path: strp("mid")}, &sw)
			ts.run(t, "forward_backward", fbRequest(a, nil, second), nil)
			ts.run(t, "optim_step", wire.OptimStepRequest{ModelID: a, AdamParams: adam}, nil)
			want, _ := ts.modelWeights(t, a)

			b := ts.newModel(t, lc)
			ts.run(t, "load_weights", wire.LoadWeightsRequest{ModelID: b, Path: sw.Path, Optimizer: true}, nil)
			ts.run(t, "forward_backward", fbRequest(b, nil, second), nil)
			var os wire.OptimStepResponse
			ts.run(t, "optim_step", wire.OptimStepRequest{ModelID: b, AdamParams: adam}, &os)
			got, _ := ts.modelWeights(t, b)
			sameWeights(t, "resumed", got, want, 0)
			if os.Metrics["step:max"] != 2 {
				t.Errorf("the step count did not carry over: %v", os.Metrics)
			}

			// Without the optimizer state: the saved weights, a fresh AdamW.
			c := ts.newModel(t, lc)
			ts.run(t, "load_weights", wire.LoadWeightsRequest{ModelID: c, Path: sw.Path, Optimizer: false}, nil)
			ts.run(t, "optim_step", wire.OptimStepRequest{ModelID: c, AdamParams: adam}, &os)
			if os.Metrics["step:max"] != 1 {
				t.Errorf("without the optimizer: %v", os.Metrics)
			}
			r := newRef(t, base, lc)
			r.step(t, first, adam)
			mid, _ := weightsOf(r.m)
			loaded, _ := ts.modelWeights(t, c)
			// A step of a zero gradient with a fresh AdamW moves only by the
			// weight decay; compare with that.
			r2 := &ref{m: r.m}
			r2.opt = native.NewAdamW(r2.m, float32(adam.Beta1), float32(adam.Beta2), float32(adam.Eps), float32(adam.WeightDecay))
			r2.m.ZeroGrad()
			if err := r2.opt.Update(r2.m, float32(adam.LearningRate)); err != nil {
				t.Fatal(err)
			}
			decayed, _ := weightsOf(r2.m)
			sameWeights(t, "loaded without the optimizer", loaded, decayed, 0)
			if maxRelDiff(t, mid, want) == 0 {
				t.Error("the second step changed nothing")
			}
		})
	}
}

// TestSecondServer checks persistence: a new server on the same state
// directory (and the same base) loads the first one's saved weights and
// samples its saved sampler weights; a server on other base weights
// refuses its adapters.
func TestSecondServer(t *testing.T) {
	dir := t.TempDir()
	for _, lc := range []*wire.LoraConfig{fullConfig(), loraConfig()} {
		t.Run(fmt.Sprintf("rank%d", lc.Rank), func(t *testing.T) {
			base := tinyPolicy(t)
			ts := start(t, base, Options{Dir: dir})
			id := ts.newModel(t, lc)
			ts.run(t, "forward_backward", fbRequest(id, nil, examples(3, 2, 16, base.VocabSize())), nil)
			ts.run(t, "optim_step", wire.OptimStepRequest{ModelID: id, AdamParams: adam}, nil)
			var sw wire.SaveWeightsResponse
			ts.run(t, "save_weights", wire.SaveWeightsRequest{ModelID: id, Path: strp("ckpt")}, &sw)
			var ss wire.SaveWeightsForSamplerResponse
			ts.run(t, "save_weights_for_sampler", wire.SaveWeightsForSamplerRequest{ModelID: id, Path: strp("ckpt")}, &ss)
			saved, _ := ts.modelWeights(t, id)
			sample := wire.SampleRequest{NumSamples: 2, Prompt: wire.TokensInput([]int{tokenizer.BOSID, 'z'}),
				SamplingParams: wire.SamplingParams{MaxTokens: 10, Seed: i64(9), Temperature: 1, TopK: -1, TopP: 1}, ModelPath: &ss.Path,
				PromptLogprobs: boolp(true)}
			var before wire.SampleResponse
			ts.run(t, "asample", sample, &before)
			ts.Close()

			// A restart: the same base, a fresh process state.
			ts2 := start(t, tinyPolicy(t), Options{Dir: dir})
			var wi wire.WeightsInfoResponse
			ts2.call(t, "weights_info", wire.WeightsInfoRequest{TinkerPath: sw.Path}, &wi)
			if wi.IsLoRA != (lc.Rank > 0) || *wi.LoRARank != lc.Rank {
				t.Errorf("weights_info %+v", wi)
			}
			id2 := ts2.newModel(t, lc)
			if id2 == id {
				t.Fatal("a model id repeated across servers")
			}
			ts2.run(t, "load_weights", wire.LoadWeightsRequest{ModelID: id2, Path: sw.Path, Optimizer: true}, nil)
			got, _ := ts2.modelWeights(t, id2)
			sameWeights(t, "loaded by the second server", got, saved, 0)
			var after wire.SampleResponse
			ts2.run(t, "asample", sample, &after)
			a, _ := json.Marshal(before)
			b, _ := json.Marshal(after)
			if string(a) != string(b) {
				t.Errorf("the second server samples the saved weights otherwise:\n%s\n%s", a, b)
			}

			// Another base model: adapters refuse to load, full weights of
			// the same architecture do.
			tok := tokenizer.New()
			m, err := native.New(tinyConfig(tok.VocabSize()), 99)
			if err != nil {
				t.Fatal(err)
			}
			other, err := local.New("tiny", m, tok)
			if err != nil {
				t.Fatal(err)
			}
			ts3 := start(t, other, Options{Dir: dir})
			id3 := ts3.newModel(t, lc)
			if lc.Rank > 0 {
				f := ts3.failure(t, "load_weights", wire.LoadWeightsRequest{ModelID: id3, Path: sw.Path})
				if f.Category != wire.CategoryUser || !strings.Contains(f.Error, "other base weights") {
					t.Errorf("adapters on another base: %+v", f)
				}
				f = ts3.failure(t, "asample", sample)
				if !strings.Contains(f.Error, "other base weights") {
					t.Errorf("sampling adapters on another base: %+v", f)
				}
			} else {
				ts3.run(t, "load_weights", wire.LoadWeightsRequest{ModelID: id3, Path: sw.Path}, nil)
			}
		})
	}
}

// TestCheckpointLayout checks what a checkpoint directory holds: a native
// checkpoint, or a PEFT adapter, with the optimizer state beside it.
func TestCheckpointLayout(t *testing.T) {
	base := tinyPolicy(t)
	ts := start(t, base, Options{})
	for _, lc := range []*wire.LoraConfig{fullConfig(), loraConfig()} {
		id := ts.newModel(t, lc)
		ts.run(t, "forward_backward", fbRequest(id, nil, examples(3, 1, 8, base.VocabSize())), nil)
		ts.run(t, "optim_step", wire.OptimStepRequest{ModelID: id, AdamParams: adam}, nil)
		ts.run(t, "save_weights", wire.SaveWeightsRequest{ModelID: id, Path: strp("w")}, nil)
		ts.run(t, "save_weights_for_sampler", wire.SaveWeightsForSamplerRequest{ModelID: id, Path: strp("s")}, nil)
		wdir := filepath.Join(ts.Dir(), id, "weights", "w")
		sdir := filepath.Join(ts.Dir(), id, "sampler_weights", "s")
		files := []string{native.ConfigFile, native.WeightsFile}
		if lc.Rank > 0 {
			files = []string{native.PEFTConfigFile, native.PEFTWeightsFile}
		}
		for _, f := range append(files, metaFile, native.OptimizerFile) {
			if !exists(filepath.Join(wdir, f)) {
				t.Errorf("rank %d: %s has no %s", lc.Rank, wdir, f)
			}
		}
		if exists(filepath.Join(sdir, native.OptimizerFile)) {
			t.Errorf("sampler weights with an optimizer state")
		}
		if _, err := os.Stat(filepath.Join(ts.Dir(), id, "model.json")); err != nil {
			t.Error(err)
		}
		// Adapters load with model/native's PEFT reader as they are.
		if lc.Rank > 0 {
			m := base.Lock().Clone()
			base.Unlock()
			if err := native.LoadPEFT(sdir, m); err != nil {
				t.Errorf("PEFT adapter: %v", err)
			}
		}
	}
	// The checkpoint is in the way of a new save under its name.
	id := ts.newModel(t, fullConfig())
	ts.run(t, "save_weights_for_sampler", wire.SaveWeightsForSamplerRequest{ModelID: id, Path: strp("once")}, nil)
	ts.detail(t, "save_weights_for_sampler", wire.SaveWeightsForSamplerRequest{ModelID: id, Path: strp("once")}, http.StatusConflict)
}
