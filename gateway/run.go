package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/agentrl/agentrl/algos"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/server/openaiapi"
	"github.com/agentrl/agentrl/train"
	"github.com/agentrl/agentrl/train/inprocess"
	"go.yaml.in/yaml/v3"
)

// Config is the gateway section of a gateway run's configuration file
// (the `gateway:` key beside the trainer's own sections).
type Config struct {
	// Listen is the address the gateway serves on (default
	// "127.0.0.1:8400"; port 0 picks a free one).
	Listen string `yaml:"listen"`
	// MaxRequests is each episode's deadline in model requests (default
	// 32).
	MaxRequests int `yaml:"max_requests"`
	// StepTimeout bounds the wait for a step's episodes (default 10m);
	// the episodes unfinished then are dropped. It is the one wall-clock
	// limit: a run whose agents finish within it trains the same episodes
	// whatever their speed.
	StepTimeout time.Duration `yaml:"step_timeout"`
	// APIKey, when set, must be sent as "Authorization: Bearer KEY" on the
	// OpenAI routes.
	APIKey string `yaml:"api_key"`
}

// ParseConfig reads a gateway run's configuration: the trainer's sections
// (train.Parse, with overrides) and the gateway section.
func ParseConfig(data []byte, overrides []string) (train.Config, Config, error) {
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return train.Config{}, Config{}, fmt.Errorf("gateway config: %w", err)
	}
	var gc Config
	if n, ok := doc["gateway"]; ok {
		raw, err := yaml.Marshal(&n)
		if err != nil {
			return train.Config{}, Config{}, err
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		dec.KnownFields(true)
		if err := dec.Decode(&gc); err != nil {
			return train.Config{}, Config{}, fmt.Errorf("gateway config: gateway: %w", err)
		}
		delete(doc, "gateway")
	}
	rest, err := yaml.Marshal(doc)
	if err != nil {
		return train.Config{}, Config{}, err
	}
	cfg, err := train.Parse(rest, overrides)
	if err != nil {
		return train.Config{}, Config{}, err
	}
	gc.setDefaults()
	if gc.MaxRequests < 0 || gc.StepTimeout < 0 {
		return train.Config{}, Config{}, errors.New("gateway config: max_requests and step_timeout must not be negative")
	}
	return cfg, gc, nil
}

func (c *Config) setDefaults() {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:8400"
	}
	if c.MaxRequests == 0 {
		c.MaxRequests = 32
	}
	if c.StepTimeout == 0 {
		c.StepTimeout = 10 * time.Minute
	}
}

// RunOptions are a gateway run's I/O.
type RunOptions struct {
	// Train are the trainer's options (logger, console, learner factory:
	// default the in-process learner, train/inprocess).
	Train train.Options
	// Ready, when set, is called with the gateway's base URL once it
	// listens, before the first step's tasks open.
	Ready func(baseURL string)
	// StepHook, when set, sees every step's episodes before training.
	StepHook func(step int, st *Step)
}

// Run is the gateway's training mode: it builds the learner of cfg,
// serves its policy through a gateway on gc.Listen, and for each of
// run.steps steps opens run.groups tasks (the environment's levels, their
// first observation as the prompt) run.group_size times each, waits for
// their episodes, and trains on the scored ones with the configuration's
// estimator.
//
// What is trained is decided by steps: step N's tasks open only after step
// N−1's update has finished, so each of its episodes is sampled entirely
// by the weights after N−1 updates. A request made during an update (by
// an agent still finishing a dropped episode, or an untagged one) waits
// for the update and is served by the new weights; the episodes it could
// belong to are closed, so it is never trained on. Metrics go to
// run.out/metrics.jsonl, one row per step, and the final weights to
// run.out/final.
func Run(ctx context.Context, cfg train.Config, gc Config, opts RunOptions) error {
	gc.setDefaults()
	log := opts.Train.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
		opts.Train.Logger = log
	}
	console := opts.Train.Console
	if console == nil {
		console = os.Stdout
	}
	if cfg.Algo.UsesTurns() || cfg.Algo.UsesCritic() {
		return errors.New("gateway: the gateway trains with outcome-level estimators without a critic (grpo, rloo, reinforce++ and the like); turn-level credit and GAE need the rollout engine")
	}
	t, err := train.New(cfg, opts.Train)
	if err != nil {
		return err
	}
	start, err := t.Start()
	if err != nil {
		return err
	}
	newLearner := opts.Train.Learner
	if newLearner == nil {
		newLearner = inprocess.New
	}
	learner, err := newLearner(ctx, start)
	if err != nil {
		return err
	}
	if c, ok := learner.(io.Closer); ok {
		defer c.Close()
	}
	factory, err := envs.NewFactory(cfg.Env.Name, &cfg.Env.Config)
	if err != nil {
		return err
	}
	env, err := factory.New()
	if err != nil {
		return err
	}
	if c, ok := env.(io.Closer); ok {
		defer c.Close()
	}
	if err := os.MkdirAll(cfg.Run.Out, 0o755); err != nil {
		return err
	}
	mf, err := os.Create(filepath.Join(cfg.Run.Out, "metrics.jsonl"))
	if err != nil {
		return err
	}
	defer mf.Close()

	g := New(learner.Policy(), Options{MaxRequests: gc.MaxRequests, Seed: cfg.Run.Seed, Logger: log,
		API: openaiOptions(gc, log), Verify: verifier(factory)})
	ln, err := net.Listen("tcp", gc.Listen)
	if err != nil {
		g.Close()
		return fmt.Errorf("gateway: %w", err)
	}
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		// Agents waiting for a task are told there are none (410) before
		// the server stops.
		g.Close()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
	}()
	base := "http://" + ln.Addr().String()
	log.Info("gateway listening", "url", base+"/v1")
	if opts.Ready != nil {
		opts.Ready(base)
	}

	next := cfg.Run.Seed
	for step := 1; step <= cfg.Run.Steps; step++ {
		t0 := time.Now()
		seeds, err := start.Levels(next, cfg.Run.Groups)
		if err != nil {
			return err
		}
		next = seeds[len(seeds)-1] + 1
		tasks := make([]Task, len(seeds))
		for i, s := range seeds {
			obs, err := env.Reset(s)
			if err != nil {
				return fmt.Errorf("level %d: %w", s, err)
			}
			prompt := obs
			if ins := env.Instruction(); ins != "" {
				prompt = ins + "\n\n" + obs
			}
			tasks[i] = Task{Seed: s, Prompt: prompt}
		}
		if err := g.Open(step, tasks, cfg.Run.GroupSize); err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, gc.StepTimeout)
		st, err := g.Wait(wctx)
		cancel()
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		for i := range st.Trajectories {
			st.Trajectories[i].Policy, st.Trajectories[i].PolicyVersion = g.model, step-1
		}
		if opts.StepHook != nil {
			opts.StepHook(step, st)
		}
		m := st.Metrics()
		m["timing_s/rollout"] = time.Since(t0).Seconds()
		m["train/score_mean"] = meanScore(st)
		if len(st.Trajectories) > 0 {
			t1 := time.Now()
			seqs := sequences(st)
			if err := learner.Prepare(ctx, seqs); err != nil {
				return err
			}
			in := algos.AdvantageInput{Scores: scores(st), Groups: st.Groups, Mask: seqs.Mask,
				OldLogProb: seqs.OldLogProb, RefLogProb: seqs.RefLogProb, Episode: seqs.Episode}
			var credit map[string]float64
			if seqs.Advantages, seqs.Returns, credit, err = cfg.Algo.AdvantagesWithMetrics(in); err != nil {
				return fmt.Errorf("advantages: %w", err)
			}
			for k, v := range credit {
				m[k] = v
			}
			var us train.UpdateStats
			err = g.Update(func() error {
				var err error
				us, err = learner.Update(context.WithoutCancel(ctx), seqs, train.UpdateOptions{LR: cfg.Algo.LR, CriticLR: cfg.Algo.CriticLR, Seed: mix(cfg.Run.Seed, uint64(step))})
				return err
			})
			if err != nil {
				return fmt.Errorf("step %d: update: %w", step, err)
			}
			for k, v := range us.Metrics {
				m[k] = v
			}
			m["timing_s/update"] = time.Since(t1).Seconds()
		}
		m["timing_s/step"] = time.Since(t0).Seconds()
		if err := writeRow(mf, step, m); err != nil {
			return err
		}
		fmt.Fprintf(console, "step %d/%d  episodes %d  dropped %d  score %.3f  history_mismatch %.3f  %.1fs\n",
			step, cfg.Run.Steps, st.Episodes, st.Dropped, m["train/score_mean"], m["gateway/history_mismatch"], m["timing_s/step"])
	}
	final := filepath.Join(cfg.Run.Out, "final")
	if err := os.RemoveAll(final); err != nil {
		return err
	}
	if err := os.MkdirAll(final, 0o755); err != nil {
		return err
	}
	return learner.Save(context.WithoutCancel(ctx), final)
}

func openaiOptions(gc Config, log *slog.Logger) (o openaiapi.Options) {
	o.APIKey, o.Logger = gc.APIKey, log
	return o
}

// verifier scores an answer as the environment's first step on the
// task's level: its reward and success.
func verifier(f *envs.Factory) func(Task, string) (float64, bool, error) {
	return func(task Task, answer string) (float64, bool, error) {
		env, err := f.New()
		if err != nil {
			return 0, false, err
		}
		if c, ok := env.(io.Closer); ok {
			defer c.Close()
		}
		if _, err := env.Reset(task.Seed); err != nil {
			return 0, false, err
		}
		r, err := env.Step(answer)
		if err != nil {
			return 0, false, err
		}
		return r.Reward, r.Info.Success, nil
	}
}

// sequences are the step's segments in the learner's form.
func sequences(st *Step) *train.Sequences {
	s := &train.Sequences{}
	for i, segs := range st.Segments {
		for _, seg := range segs {
			s.Episode = append(s.Episode, i)
			s.Tokens = append(s.Tokens, seg.Tokens)
			s.Mask = append(s.Mask, seg.LossMask)
			s.OldLogProb = append(s.OldLogProb, seg.LogProbs)
		}
	}
	return s
}

func scores(st *Step) []float64 {
	out := make([]float64, len(st.Trajectories))
	for i, tr := range st.Trajectories {
		out[i] = tr.Score
	}
	return out
}

func meanScore(st *Step) float64 {
	if len(st.Trajectories) == 0 {
		return math.NaN()
	}
	sum := 0.0
	for _, tr := range st.Trajectories {
		sum += tr.Score
	}
	return sum / float64(len(st.Trajectories))
}

// writeRow appends step's metrics row (non-finite values as null).
func writeRow(w io.Writer, step int, m map[string]float64) error {
	obj := make(map[string]any, len(m)+1)
	for k, v := range m {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			obj[k] = nil
		} else {
			obj[k] = v
		}
	}
	obj["step"] = step
	line, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = w.Write(append(bytes.TrimSpace(line), '\n'))
	return err
}
