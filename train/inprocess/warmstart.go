package inprocess

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/internal/yamlpath"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/rollout"
	"github.com/agentrl/agentrl/text/tokenizer"
	"github.com/agentrl/agentrl/train"
)

// warmSeedBase is where warm-start demonstration seeds start, far from the
// training (run.train_seed_base) and validation (validation.seed_base) seeds.
const warmSeedBase = 1 << 32

// tokenizerFile is the tokenizer's name inside checkpoints.
const tokenizerFile = "tokenizer.json"

// Starting is the model RL starts from, with its text side.
type Starting struct {
	// Tokenizer is the agentrl tokenizer, or nil for a Hugging Face model,
	// whose tokenizer and chat template are in HF.
	Tokenizer *tokenizer.Tokenizer
	HF        local.HFFiles
	Model     *native.Model
	// Dir is the model's directory (model.init or the warm-start cache
	// entry); empty for a fresh model, which lives in memory only.
	Dir string
	// Cached reports that the model was loaded, not trained now.
	Cached bool
}

// Policy returns the starting model as an in-process policy for env (an
// environment name, which names the policy), with its text side.
func (s *Starting) Policy(env string) (*local.Policy, error) {
	if s.HF != nil {
		return local.NewHF(env, s.Model, s.HF)
	}
	return local.New(env, s.Model, s.Tokenizer)
}

// TokenizerBytes is what identifies the model's tokenizer: the agentrl
// tokenizer's file, or the Hugging Face tokenizer.json.
func (s *Starting) TokenizerBytes() ([]byte, error) {
	if s.HF != nil {
		return s.HF[local.TokenizerFile], nil
	}
	return tokenizerJSON(s.Tokenizer)
}

// warmStarter builds a run's starting model.
type warmStarter struct {
	cfg  train.Config
	log  *slog.Logger
	now  func() time.Time
	demo *envs.Factory
	// levels returns n level seeds from base upward outside the validation
	// set (train.Start.Levels).
	levels func(base uint64, n int) ([]uint64, error)
}

// StartingModel returns the model RL starts from: loaded from model.init,
// from the warm-start cache, or built now (a tokenizer trained on expert
// demonstrations, and the model trained on them by supervised learning),
// or a fresh model when the warm start is off. A warm start trained now
// is reported to start (train.Start.ReportWarmStart).
func StartingModel(ctx context.Context, start *train.Start) (*Starting, error) {
	w := warmStarter{cfg: start.Config, log: start.Log, now: start.Now, demo: start.Demonstrations, levels: start.Levels}
	began := w.now()
	s, err := w.start(ctx)
	if err != nil {
		return nil, err
	}
	if !s.Cached {
		start.ReportWarmStart(w.now().Sub(began))
	}
	return s, nil
}

// warmStartKey identifies everything the warm start depends on, so a cached
// result is reused only for the same inputs: the settings, and the
// demonstrations' text itself, so that a change to an environment or its
// expert (new observations, other actions or rationales) is never answered
// with a model trained on the old ones, and the arithmetic of the build
// (native.ArithmeticID). Settings the stage never reads are
// left out, so that runs differing only in them share one warm start:
// validation, and the rollout's sampling (the demonstrations are the
// expert's, not sampled; their text is in the key anyway).
func (w warmStarter) key(demos []rollout.Trajectory) (string, error) {
	c := w.cfg
	// The settings as dotted YAML keys, as in the run identity: printing
	// the structs with %v would show the addresses inside yaml.Node
	// fields (validation.env_config), giving a new key on every start.
	flat := map[string]string{}
	for _, part := range []struct {
		prefix string
		v      any
	}{{"env.config", w.demo.Config()}, {"rollout", c.Rollout}, {"model", c.Model},
		{"warm_start", c.WarmStart}} {
		if err := yamlpath.Flatten(part.prefix, part.v, flat); err != nil {
			return "", err
		}
	}
	// The warm start trains every weight (adapters come after it), from
	// the expert's demonstrations (neither sampled nor scheduled).
	for k := range flat {
		if strings.HasPrefix(k, "model.lora.") || strings.HasPrefix(k, "rollout.sampling") || k == "rollout.staleness" ||
			strings.HasPrefix(k, "warm_start.env_config") { // merged into env.config above
			delete(flat, k)
		}
	}
	// The arithmetic too: a build whose kernels round differently would
	// not have trained the cached model, and a run from a fresh clone
	// would not reproduce one that reused it.
	arith, err := native.ArithmeticID()
	if err != nil {
		return "", fmt.Errorf("warm start: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "v5|env=%s|seed=%d|arithmetic=%s\n", c.Env.Name, c.Run.Seed, arith)
	for _, k := range slices.Sorted(maps.Keys(flat)) {
		if !train.Inert(k) {
			fmt.Fprintf(h, "%s=%s\n", k, flat[k])
		}
	}
	for _, d := range demos {
		fmt.Fprintf(h, "demo %d %d\n", d.Seed, len(d.Messages))
		for _, m := range d.Messages {
			fmt.Fprintf(h, "%s %d\n%s\n", m.Role, len(m.Content), m.Content)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}

// start builds the starting model (see StartingModel).
//
// model.init skips the warm start: the model there is the starting point.
// For a Hugging Face directory this is the only choice, not a shortcut: the
// warm start trains agentrl's own tokenizer and renders demonstrations with
// its chat template, neither of which a pretrained model can take.
func (w warmStarter) start(ctx context.Context) (*Starting, error) {
	c := w.cfg
	if c.Model.Init != "" && local.IsHFDir(c.Model.Init) {
		model, files, err := local.ReadHF(c.Model.Init, c.Model.MaxSeq)
		if err != nil {
			return nil, fmt.Errorf("model.init: %w", err)
		}
		if c.WarmStart.Enabled {
			w.log.Info("model.init is a Hugging Face model: training it as it is, without the warm start", "dir", c.Model.Init)
		}
		return &Starting{HF: files, Model: model, Cached: true, Dir: c.Model.Init}, nil
	}
	if c.Model.Init != "" {
		ck, err := native.LoadCheckpoint(c.Model.Init)
		if err != nil {
			return nil, fmt.Errorf("model.init: %w", err)
		}
		tok, err := tokenizerFromExtra(ck.Extra)
		if err != nil {
			return nil, fmt.Errorf("model.init: %w", err)
		}
		return &Starting{Tokenizer: tok, Model: ck.Model, Cached: true, Dir: c.Model.Init}, nil
	}
	seeds, err := w.levels(warmSeedBase, c.WarmStart.Episodes)
	if err != nil {
		return nil, err
	}
	if !c.WarmStart.Enabled {
		seeds = seeds[:min(len(seeds), 200)] // enough text to train the tokenizer
	}
	start := w.now()
	perturb := c.WarmStart.Perturb
	if !c.WarmStart.Enabled {
		perturb = 0
	}
	demos, err := rollout.Demonstrate(ctx, c.Rollout, w.demo, seeds,
		rollout.DemoOptions{Perturb: perturb, Brief: c.WarmStart.Rationale == "brief", Seed: c.Run.Seed})
	if err != nil {
		return nil, err
	}
	for _, d := range demos {
		if d.Err != "" {
			return nil, fmt.Errorf("warm start: demonstration on seed %d: %s", d.Seed, d.Err)
		}
	}
	key, err := w.key(demos)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(c.WarmStart.CacheDir, "warmstart-"+c.Env.Name+"-"+key)
	if c.WarmStart.Enabled {
		if ck, err := native.LoadCheckpoint(dir); err == nil {
			tok, err := tokenizerFromExtra(ck.Extra)
			if err == nil {
				w.log.Info("warm start: using cached model", "dir", dir)
				return &Starting{Tokenizer: tok, Model: ck.Model, Cached: true, Dir: dir}, nil
			}
			w.log.Warn("warm start: cached model unusable, rebuilding", "dir", dir, "err", err)
		} else if !errors.Is(err, fs.ErrNotExist) {
			w.log.Warn("warm start: cached model unreadable, rebuilding", "dir", dir, "err", err)
		}
	}
	var corpus []string
	succeeded := 0
	for _, d := range demos {
		if d.Success {
			succeeded++
		}
		for _, m := range d.Messages {
			corpus = append(corpus, m.Content)
		}
	}
	tok, err := tokenizer.Train(corpus, c.Model.VocabSize, tokenizer.TrainOptions{})
	if err != nil {
		return nil, fmt.Errorf("warm start: tokenizer: %w", err)
	}
	w.log.Info("warm start: demonstrations", "episodes", len(demos), "success", float64(succeeded)/float64(len(demos)),
		"vocab", tok.VocabSize(), "elapsed", w.now().Sub(start).Round(time.Millisecond))

	model, err := native.New(c.Model.Native(tok.VocabSize()), c.Run.Seed)
	if err != nil {
		return nil, err
	}
	if !c.WarmStart.Enabled {
		return &Starting{Tokenizer: tok, Model: model}, nil
	}
	partial := dir + ".partial"
	if model, err = w.supervise(ctx, model, tok, demos, partial); err != nil {
		return nil, err
	}
	tokJSON, err := tokenizerJSON(tok)
	if err != nil {
		return nil, err
	}
	if err := native.SaveCheckpoint(dir, model, nil, map[string][]byte{tokenizerFile: tokJSON}); err != nil {
		return nil, fmt.Errorf("warm start: cache: %w", err)
	}
	if err := os.RemoveAll(partial); err != nil {
		w.log.Warn("warm start: could not remove the interrupted warm start's state", "dir", partial, "err", err)
	}
	return &Starting{Tokenizer: tok, Model: model, Dir: dir}, nil
}

// supervise trains model to reproduce the assistant turns of the
// demonstrations: warm_start.steps optimizer steps of the masked
// cross-entropy (algos.SFTLoss, token-mean), through the same step as RL
// updates (nativeStep), and returns the trained model. The budget is a
// step count, so the result does not depend on the machine;
// warm_start.max_duration, if set, may cut it short and says so.
//
// Interrupted, it saves its model, optimizer, step and random stream to
// partial (beside the cache entry, under the same key) and the next run
// continues from there, to the same bits as an uninterrupted warm start.
func (w warmStarter) supervise(ctx context.Context, model *native.Model, tok *tokenizer.Tokenizer, demos []rollout.Trajectory, partial string) (*native.Model, error) {
	c := w.cfg.WarmStart
	all := &train.Sequences{}
	for _, d := range demos {
		for _, msgs := range trainingConversations(d.Messages, w.cfg.Rollout.HistoryWindow) {
			r, err := tok.RenderTraining(msgs)
			if err != nil {
				return nil, err
			}
			if len(r.IDs) > model.Config().MaxSeq {
				continue
			}
			if w.cfg.Rollout.HistoryWindow > 0 {
				// Only the window's last reply is this turn's to learn.
				last := r.Messages[len(r.Messages)-1].Start
				for i := 0; i < last; i++ {
					r.AssistantMask[i] = false
				}
			}
			r.AssistantMask[0] = false // no context to predict the first token from
			all.Tokens, all.Mask = append(all.Tokens, r.IDs), append(all.Mask, r.AssistantMask)
		}
	}
	if all.Len() == 0 {
		return nil, fmt.Errorf("warm start: every demonstration is longer than model.max_seq %d", model.Config().MaxSeq)
	}
	opt := native.NewAdamW(model, 0.9, 0.95, 1e-8, 0)
	sched := native.Schedule{Peak: c.LR, Min: c.LR, Warmup: 30}
	pcg := rand.NewPCG(w.cfg.Run.Seed, 0x5f7)
	rng := rand.New(pcg)
	start := w.now()
	lastLog := start
	var lossSum float64
	var lossN, skipped int
	step := 0
	if p, err := loadWarmProgress(partial, model.Config(), c.Steps); err == nil {
		model, opt, step, skipped = p.model, p.opt, p.Step, p.Skipped
		if err := pcg.UnmarshalBinary(p.RNG); err != nil {
			return nil, fmt.Errorf("warm start: %s: %w", partial, err)
		}
		w.log.Info("warm start: continuing an interrupted warm start", "step", step, "of", c.Steps, "dir", partial)
	} else if !errors.Is(err, fs.ErrNotExist) {
		w.log.Warn("warm start: the interrupted warm start's state is unusable; starting afresh", "dir", partial, "err", err)
	}
	for ; step < c.Steps; step++ {
		if testHookWarmStep != nil {
			testHookWarmStep(step)
		}
		if err := ctx.Err(); err != nil {
			if serr := saveWarmProgress(partial, model, opt, warmProgress{Step: step, Skipped: skipped}, pcg); serr != nil {
				return nil, errors.Join(err, fmt.Errorf("warm start: saving its progress: %w", serr))
			}
			w.log.Info("warm start: interrupted; its progress is saved and the same command continues from there", "step", step, "of", c.Steps, "dir", partial)
			return nil, err
		}
		if c.MaxDuration > 0 && w.now().Sub(start) >= c.MaxDuration {
			w.log.Warn("warm start: warm_start.max_duration reached before warm_start.steps; "+
				"the starting model now depends on this machine's speed", "steps", step, "of", c.Steps, "max_duration", c.MaxDuration)
			break
		}
		idx := make([]int, c.Batch)
		for i := range idx {
			idx[i] = rng.IntN(all.Len())
		}
		mb := all.Subset(idx)
		// A step runs to its end (milliseconds): an interrupt is taken
		// between steps, where the progress can be saved.
		m, ok, err := nativeStep(context.WithoutCancel(ctx), model, opt, mb, 1, sched.LR(step), "sft", sftLoss(mb))
		if err != nil {
			return nil, err
		}
		if !ok {
			skipped++
			w.log.Warn("warm start: non-finite loss or gradient, step skipped", "step", step)
			continue
		}
		lossSum += m["sft/loss"]
		lossN++
		if now := w.now(); now.Sub(lastLog) > 15*time.Second {
			w.log.Info("warm start: training", "step", step, "of", c.Steps, "loss", lossSum/float64(lossN),
				"elapsed", now.Sub(start).Round(time.Second))
			lastLog, lossSum, lossN = now, 0, 0
		}
	}
	w.log.Info("warm start: done", "steps", step, "skipped", skipped, "sequences", all.Len(), "elapsed", w.now().Sub(start).Round(time.Second))
	return model, nil
}

// testHookWarmStep, when set by a test, runs before each warm-start step
// (a test interrupts the warm start there).
var testHookWarmStep func(step int)

// warmProgressFile holds an interrupted warm start's place, beside its
// model and optimizer.
const warmProgressFile = "warm_start_progress.json"

// warmProgress is an interrupted warm start's place: the next step, the
// steps skipped so far and the state of its random stream.
type warmProgress struct {
	Step    int    `json:"step"`
	Skipped int    `json:"skipped"`
	RNG     []byte `json:"rng"`

	model *native.Model
	opt   *native.AdamW
}

func saveWarmProgress(dir string, model *native.Model, opt *native.AdamW, p warmProgress, pcg *rand.PCG) error {
	var err error
	if p.RNG, err = pcg.MarshalBinary(); err != nil {
		return err
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return native.SaveCheckpoint(dir, model, opt, map[string][]byte{warmProgressFile: raw})
}

// loadWarmProgress reads what saveWarmProgress wrote, for a model of
// config cfg and a warm start of steps steps; fs.ErrNotExist when there is
// none.
func loadWarmProgress(dir string, cfg native.Config, steps int) (warmProgress, error) {
	ck, err := native.LoadCheckpoint(dir)
	if err != nil {
		return warmProgress{}, err
	}
	var p warmProgress
	if err := json.Unmarshal(ck.Extra[warmProgressFile], &p); err != nil {
		return warmProgress{}, fmt.Errorf("%s: %w", warmProgressFile, err)
	}
	switch {
	case ck.Optimizer == nil:
		return warmProgress{}, errors.New("no optimizer state")
	case !reflect.DeepEqual(ck.Model.Config(), cfg):
		return warmProgress{}, errors.New("a model of another configuration")
	case p.Step < 0 || p.Step > steps || p.Skipped < 0 || p.Skipped > p.Step:
		return warmProgress{}, fmt.Errorf("step %d (%d skipped) out of range for %d steps", p.Step, p.Skipped, steps)
	}
	p.model, p.opt = ck.Model, ck.Optimizer
	return p, nil
}

// trainingConversations splits a transcript into what the model sees when
// it writes each reply: the whole conversation (window 0), or for each
// assistant message, the system message and the window's last turns ending
// with that message.
func trainingConversations(msgs []policy.Message, window int) [][]tokenizer.Message {
	conv := make([]tokenizer.Message, len(msgs))
	for i, m := range msgs {
		conv[i] = tokenizer.Message{Role: m.Role, Content: m.Content}
	}
	if window <= 0 {
		return [][]tokenizer.Message{conv}
	}
	var head []tokenizer.Message
	body := conv
	if len(body) > 0 && body[0].Role == tokenizer.RoleSystem {
		head, body = body[:1], body[1:]
	}
	var out [][]tokenizer.Message
	for i, m := range body {
		if m.Role != tokenizer.RoleAssistant {
			continue
		}
		first := max(0, i+1-2*window)
		w := append(append([]tokenizer.Message(nil), head...), body[first:i+1]...)
		out = append(out, w)
	}
	return out
}

func tokenizerJSON(tok *tokenizer.Tokenizer) ([]byte, error) {
	var b bytes.Buffer
	if err := tok.Save(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func tokenizerFromExtra(extra map[string][]byte) (*tokenizer.Tokenizer, error) {
	data, ok := extra[tokenizerFile]
	if !ok {
		return nil, fmt.Errorf("checkpoint has no %s", tokenizerFile)
	}
	return tokenizer.Load(bytes.NewReader(data))
}
