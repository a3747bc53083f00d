package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentrl/agentrl/algos"
	"github.com/agentrl/agentrl/client/openaichat"
	"github.com/agentrl/agentrl/client/vllm"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/internal/stats"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/rollout"
	"github.com/agentrl/agentrl/train"
)

func runEval(ctx context.Context, args []string, s stdio) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(s.err)
	var (
		configPath = fs.String("config", "configs/sokoban.yaml", "YAML run config (its env and rollout sections are used)")
		checkpoint = fs.String("checkpoint", "", "evaluate this checkpoint in process: a native checkpoint or a Hugging Face model directory")
		vllmURLs   = fs.String("vllm", "", "evaluate a vLLM server (comma-separated base URLs); token-level, as in training")
		openaiURL  = fs.String("openai", "", "evaluate any OpenAI-compatible chat endpoint (base URL ending in /v1)")
		model      = fs.String("model", "", "model name for -vllm or -openai")
		apiKey     = fs.String("api-key", os.Getenv("AGENTRL_API_KEY"), "API key for -vllm or -openai")
		episodes   = fs.Int("episodes", 100, "number of episodes (one per seed)")
		seedBase   = fs.Uint64("seed", 1<<40, "first episode seed (the default is the trainer's validation range)")
		temp       = fs.Float64("temperature", -1, "sampling temperature (default: the config's)")
		out        = fs.String("out", "", "write transcripts.jsonl and summary.json here")
		collapse   = fs.Bool("collapse", true, "compute the template-collapse metrics (MI, retrieval accuracy, the regime) of the episodes by scoring them with the policy (-checkpoint or -vllm: prompt_logprobs on the server)")
		sets       overrides
	)
	fs.Var(&sets, "set", "config override key=value (repeatable)")
	if err := fs.Parse(args); err != nil {
		return parseError(err)
	}
	if fs.NArg() > 0 {
		return usageErrorf("unexpected arguments %q", fs.Args())
	}
	backends := 0
	for _, b := range []string{*checkpoint, *vllmURLs, *openaiURL} {
		if b != "" {
			backends++
		}
	}
	if backends != 1 {
		return usageErrorf("give exactly one of -checkpoint, -vllm or -openai")
	}
	if *episodes < 1 {
		return usageErrorf("-episodes must be at least 1")
	}
	if *openaiURL != "" && *model == "" {
		return usageErrorf("-openai needs -model")
	}
	cfg, err := train.Load(*configPath, sets)
	if err != nil {
		return err
	}
	factory, err := envs.NewFactory(cfg.Env.Name, &cfg.Env.Config)
	if err != nil {
		return err
	}
	rc := cfg.Rollout
	if *temp >= 0 {
		rc.Sampling.Temperature = *temp
	}
	seeds := make([]uint64, *episodes)
	for i := range seeds {
		seeds[i] = *seedBase + uint64(i)
	}

	var (
		trajs  []rollout.Trajectory
		scorer policy.Policy // the policy that scores the collapse metrics; nil for -openai
	)
	if *openaiURL != "" {
		trajs, err = rollout.RunChat(ctx, rc, openaichat.New(*openaiURL, *apiKey, *model), factory, seeds)
	} else {
		var p policy.Policy
		if *checkpoint != "" {
			lp, err := local.LoadCheckpoint(*checkpoint)
			if err != nil {
				return err
			}
			p = lp
		} else {
			c, err := vllm.New(ctx, vllm.Options{BaseURLs: strings.Split(*vllmURLs, ","), Model: *model, APIKey: *apiKey})
			if err != nil {
				return err
			}
			defer c.Close()
			p = c
		}
		engine, err := rollout.New(ctx, rc, p, factory)
		if err != nil {
			return err
		}
		trajs, err = engine.Run(ctx, seeds, 1, *seedBase)
		if err != nil {
			return err
		}
		scorer = p
	}
	if err != nil {
		return err
	}
	m := rollout.Metrics("eval", trajs, 1)
	lo, hi := stats.Wilson(m["eval/success"], len(trajs))
	fmt.Fprintf(s.out, "episodes %d  success %.3f (95%% CI %.3f-%.3f)  mean return %.3f  format-valid %.3f  failed %d\n",
		len(trajs), m["eval/success"], lo, hi, m["eval/score"], m["eval/format_ok"], int(m["eval/failed"]))
	if *collapse && scorer != nil {
		cm, regime, err := train.CollapseMetrics(ctx, scorer, trajs, cfg.Collapse, *seedBase)
		if err != nil {
			return fmt.Errorf("collapse metrics: %w", err)
		}
		for k, v := range cm {
			m[k] = v
		}
		fmt.Fprintln(s.out, collapseLine(cm, regime, cfg.Collapse))
	}
	if *out != "" {
		m["eval/success_ci_low"], m["eval/success_ci_high"] = lo, hi
		if err := writeEval(*out, trajs, m); err != nil {
			return err
		}
		fmt.Fprintf(s.out, "transcripts: %s\n", filepath.Join(*out, "transcripts.jsonl"))
	}
	return nil
}

// collapseLine summarises the collapse metrics of an evaluation: the
// alarm's scheme's MI estimate against its upper bound, retrieval accuracy
// against chance, the reasoning's entropy per token and the regime.
func collapseLine(m map[string]float64, regime algos.Regime, cfg train.CollapseConfig) string {
	prefix := algos.SchemeFirstTurn
	if !cfg.FirstTurn {
		prefix = algos.SchemeTrajectory
	}
	if regime == "" {
		return fmt.Sprintf("collapse: too few distinct prompts to score (valid thinking %.3f)", m["collapse/valid_thinking_rate"])
	}
	get := func(k string) float64 { return m[prefix+"/"+k] }
	return fmt.Sprintf("collapse (%s): MI %.3f of at most %.3f nats  retrieval %.3f (chance %.3f)  H(Z|X) %.3f nats/token  valid thinking %.3f  regime %s",
		prefix, get("mi_estimate"), get("mi_upper_bound"), get("retrieval_accuracy"), get("retrieval_chance_level"),
		get("conditional_entropy_est"), m["collapse/valid_thinking_rate"], regime)
}

// transcript is one line of transcripts.jsonl.
type transcript struct {
	Seed     uint64           `json:"seed"`
	Success  bool             `json:"success"`
	Score    float64          `json:"score"`
	Actions  int              `json:"actions"`
	Policy   string           `json:"policy,omitempty"` // the model that played (a served adapter's name)
	Err      string           `json:"error,omitempty"`
	Messages []policy.Message `json:"messages"`
}

func writeEval(dir string, trajs []rollout.Trajectory, m map[string]float64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "transcripts.jsonl"))
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, tr := range trajs {
		if err := enc.Encode(transcript{Seed: tr.Seed, Success: tr.Success, Score: tr.Score, Actions: tr.Actions, Policy: tr.Policy, Err: tr.Err, Messages: tr.Messages}); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	summary, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "summary.json"), append(summary, '\n'), 0o644)
}
