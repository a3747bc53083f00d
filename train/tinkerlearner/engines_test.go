package tinkerlearner

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/client/tinker"
	"github.com/agentrl/agentrl/train/traintest"
)

// TestEngineProfiles checks each engine's table (engines.go, and
// docs/tinker.md's): for a configuration, the keys refused (fatal) and
// the keys reported (IgnoredSettings).
func TestEngineProfiles(t *testing.T) {
	type want struct{ fatal, reported []string }
	lora := []string{"model.lora.rank=8", "model.lora.alpha=32", "algo.grad_clip=0", "algo.entropy_coeff=0"}
	cases := []struct {
		name   string
		sets   []string
		engine map[tinker.Engine]want
	}{
		{"LoRA at alpha 32, no clip", lora, map[tinker.Engine]want{
			tinker.EngineAgentrl:    {},
			tinker.EngineTinker:     {reported: []string{"model.lora.alpha"}},
			tinker.EngineSkyRLJAX:   {reported: []string{"model.lora.targets", "tinker.loss"}},
			tinker.EngineSkyRLTrain: {reported: []string{"model.lora.targets", "algo.grad_clip", "algo.weight_decay", "adam_params.beta1, beta2, eps"}},
			tinker.EngineUnknown:    {reported: []string{"tinker.url"}},
		}},
		{"the defaults: full weights, clip 1, an entropy bonus", nil, map[tinker.Engine]want{
			tinker.EngineAgentrl:    {reported: []string{"algo.entropy_coeff"}},
			tinker.EngineTinker:     {fatal: []string{"model.lora.rank"}, reported: []string{"algo.entropy_coeff"}},
			tinker.EngineSkyRLJAX:   {fatal: []string{"model.lora.rank", "algo.grad_clip"}, reported: []string{"algo.entropy_coeff", "tinker.loss"}},
			tinker.EngineSkyRLTrain: {reported: []string{"algo.entropy_coeff", "algo.grad_clip", "algo.weight_decay", "adam_params.beta1, beta2, eps"}},
		}},
		{"alpha 16, attention only", []string{"model.lora.rank=8", "model.lora.alpha=16", "algo.grad_clip=0", "algo.entropy_coeff=0",
			"model.lora.targets=[q_proj,k_proj,v_proj,o_proj]"}, map[tinker.Engine]want{
			tinker.EngineAgentrl:    {},
			tinker.EngineTinker:     {reported: []string{"model.lora.alpha"}},
			tinker.EngineSkyRLJAX:   {fatal: []string{"model.lora.alpha", "model.lora.targets"}, reported: []string{"tinker.loss"}},
			tinker.EngineSkyRLTrain: {fatal: []string{"model.lora.alpha", "model.lora.targets"}, reported: []string{"algo.grad_clip", "algo.weight_decay", "adam_params.beta1, beta2, eps"}},
		}},
		{"targets no group holds whole", append(slices.Clone(lora), "model.lora.targets=[q_proj,v_proj]"), map[tinker.Engine]want{
			tinker.EngineAgentrl: {fatal: []string{"model.lora.targets"}},
			tinker.EngineTinker:  {fatal: []string{"model.lora.targets"}, reported: []string{"model.lora.alpha"}},
		}},
		{"rank above SkyRL-JAX's default max", []string{"model.lora.rank=64", "model.lora.alpha=32", "algo.grad_clip=0", "algo.entropy_coeff=0"}, map[tinker.Engine]want{
			tinker.EngineSkyRLJAX: {reported: []string{"model.lora.rank", "model.lora.targets", "tinker.loss"}},
		}},
	}
	for _, c := range cases {
		cfg := traintest.TinyConfig(t, filepath.Join(t.TempDir(), "run"), 1, append(c.sets, "tinker.url=local")...)
		for e, w := range c.engine {
			var fatal, reported []string
			for _, f := range engineFindings(e, cfg) {
				if f.fatal {
					fatal = append(fatal, f.key)
				} else {
					reported = append(reported, f.key)
				}
			}
			if !slices.Equal(fatal, w.fatal) || !slices.Equal(reported, w.reported) {
				t.Errorf("%s on %s:\n fatal %q, want %q\n reported %q, want %q", c.name, e, fatal, w.fatal, reported, w.reported)
			}
			lines, err := checkEngine(tinker.EngineReport{Engine: e}, cfg)
			if (err != nil) != (len(w.fatal) > 0) || len(lines) != len(w.reported) {
				t.Errorf("%s on %s: checkEngine %v, %q", c.name, e, err, lines)
			}
			for _, k := range w.fatal {
				if !strings.Contains(err.Error(), k+":") {
					t.Errorf("%s on %s: the error does not name %s: %v", c.name, e, k, err)
				}
			}
		}
	}
}
