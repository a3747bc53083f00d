package train

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentrl/agentrl/algos"
	"github.com/agentrl/agentrl/internal/yamlpath"
)

// ErrRunMismatch is returned (wrapped, with the differences) when the run
// directory holds a different run than the configuration describes.
var ErrRunMismatch = errors.New("the run directory holds a different run")

// identityFile records, at the top of a run directory, which run it holds;
// checkpoints carry the same record.
const identityFile = "run.json"

// identityFormat versions the identity record.
const identityFormat = 1

// runIdentity says which run a directory holds: the environment, every
// setting that changes what the run computes, and the model it trains.
// Settings that only schedule or report (run.steps, run.out, checkpoint
// and validation schedules, collapse metrics, transcripts, the warm-start
// cache directory) are not part of it, so a finished run can be extended
// with a larger run.steps and resumed.
type runIdentity struct {
	Format int    `json:"format"`
	Env    string `json:"env"`
	// ConfigHash is the SHA-256 of Config.
	ConfigHash string `json:"config_hash"`
	// Config holds the identifying settings as dotted keys.
	Config map[string]string `json:"config"`
	// Model is the trained model (set once it exists).
	Model *ModelInfo `json:"model,omitempty"`
}

// identityKeys lists the identifying parts of a Config: whole sections,
// or single keys of the others.
//
// The server section is not among them. Its keys say where rollouts
// sample (URLs, API key, model name, adapter directories), not what the
// run computes: the sampler serves the learner's own weights, pushed after
// every step, and the learner recomputes the old log-probs itself, so a
// run may move between servers, or between a server and `trainer serve`,
// and resume. What a sampler can change (its kernels' numerics, as
// another machine's can) is measured per step (mismatch/*) rather than
// fixed by the identity; algo.recompute_old_log_prob, which a server turns
// on, is part of it. The tinker section is not among them either, for
// the same reason: it says where the learner runs; the learner's kind
// (native or tinker) is part of the model's description, which is.
var identityKeys = []string{
	"env", "rollout", "model", "algo", "filter", "warm_start",
	"run.seed", "run.groups", "run.group_size", "run.train_seed_base",
	"validation.levels", "validation.seed_base", "validation.temperature", "validation.samples", "validation.env_config",
}

// notIdentity are keys inside identifying sections that do not change
// what the run computes: where the warm-start cache lives, and the rollout
// engine's concurrency, timeouts and retries (they decide whether a
// failing call is given more time or another try, not what it returns).
var notIdentity = map[string]bool{"warm_start.cache_dir": true, "rollout.concurrency": true,
	"rollout.sample_timeout": true, "rollout.step_timeout": true, "rollout.env_retries": true, "rollout.env_retry_delay": true}

// Inert reports whether a setting (a dotted key) changes nothing a run
// computes although its section does: where the warm-start cache lives,
// and the rollout engine's concurrency, timeouts and retries. A learner that keys a
// cache on settings (the warm start) leaves these out.
func Inert(key string) bool { return notIdentity[key] }

// inactiveAlgoKeys lists the settings of options the preset leaves off
// (turn-level credit, micro-batch weighting, a policy loss other than PPO,
// the rollout importance-sampling correction): they change nothing, so
// they are not part of the identity, and runs recorded before those
// settings existed still match.
func inactiveAlgoKeys(p algos.Preset, f algos.FilterConfig) []string {
	var out []string
	if f.Strategy != algos.StrategyPercentileRange {
		out = append(out, "filter.percentile_low", "filter.percentile_high")
	}
	if p.Credit == algos.CreditNone || p.Credit == "" {
		out = append(out, "algo.credit")
	}
	if p.Credit != algos.CreditGiGPO {
		out = append(out, "algo.gigpo_step_weight", "algo.gigpo_gamma")
	}
	if p.Credit != algos.CreditSolver {
		out = append(out, "algo.solver_alpha", "algo.solver_transform")
	}
	if !p.BiLevelGAE {
		out = append(out, "algo.bi_level_gae", "algo.high_level_gamma")
	}
	if !p.MicroBatchWeighting {
		out = append(out, "algo.micro_batch_weighting")
	}
	if p.PolicyLoss == "" || p.PolicyLoss == algos.PolicyLossPPO {
		out = append(out, "algo.policy_loss")
	}
	if !p.RolloutIS {
		out = append(out, "algo.rollout_is", "algo.rollout_is_level", "algo.rollout_is_mode",
			"algo.rollout_is_threshold", "algo.rollout_is_threshold_lower", "algo.rollout_is_veto_threshold")
	}
	return out
}

// identity computes the run identity of the trainer's configuration
// (without the model). The environment's section is its resolved
// configuration, defaults included, so spelling a default out does not
// make a different run.
func (t *Trainer) identity() (runIdentity, error) {
	c := t.cfg
	flat := map[string]string{}
	if err := yamlpath.Flatten("", &c, flat); err != nil {
		return runIdentity{}, err
	}
	for k := range flat {
		if k == "env.config" || strings.HasPrefix(k, "env.config.") {
			delete(flat, k)
		}
	}
	if err := yamlpath.Flatten("env.config", t.factory.Config(), flat); err != nil {
		return runIdentity{}, err
	}
	for _, k := range inactiveAlgoKeys(c.Algo.Preset, c.Filter.FilterConfig) {
		delete(flat, k)
	}
	if !c.Model.LoRA.Enabled() {
		// Without adapters their settings change nothing, and runs
		// recorded before they existed still match.
		deletePrefix(flat, loraPrefix)
	}
	if !c.Algo.RecomputeOldLogProb {
		// Off, runs recorded before the setting existed still match.
		delete(flat, "algo.recompute_old_log_prob")
	}
	if c.Rollout.Staleness == 0 {
		// Sampling in line, as runs recorded before the setting did.
		delete(flat, "rollout.staleness")
	}
	if flat["warm_start.env_config"] == "" {
		// Unset, it changes nothing, and runs recorded before it existed
		// still match.
		delete(flat, "warm_start.env_config")
	}
	id := runIdentity{Format: identityFormat, Env: c.Env.Name, Config: map[string]string{}}
	for k, v := range flat {
		if notIdentity[k] {
			continue
		}
		for _, want := range identityKeys {
			if k == want || strings.HasPrefix(k, want+".") {
				id.Config[k] = v
				break
			}
		}
	}
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(id.Config)) {
		fmt.Fprintf(h, "%s=%s\n", k, id.Config[k])
	}
	id.ConfigHash = hex.EncodeToString(h.Sum(nil))
	return id, nil
}

// loraPrefix is the prefix of model.lora's keys.
const loraPrefix = "model.lora."

// deletePrefix removes the keys that start with prefix.
func deletePrefix(flat map[string]string, prefix string) {
	for k := range flat {
		if strings.HasPrefix(k, prefix) {
			delete(flat, k)
		}
	}
}

// mismatch compares the identity recorded in a run directory with this
// run's and returns nil when they describe the same run, or an error that
// names every difference (at most ten, then a count) and the two ways out.
func (id runIdentity) mismatch(recorded runIdentity, dir string) error {
	var diffs []string
	if recorded.Format != id.Format {
		diffs = append(diffs, fmt.Sprintf("identity format: %d there, %d here", recorded.Format, id.Format))
	}
	all := maps.Clone(recorded.Config)
	if all == nil {
		all = map[string]string{}
	}
	maps.Copy(all, id.Config)
	show := func(m map[string]string, k string) string {
		v, ok := m[k]
		if !ok {
			return "(unset)"
		}
		if v == "" {
			return `""`
		}
		return v
	}
	keys := slices.Sorted(maps.Keys(all))
	// The environment first: when it differs, most other differences follow from it.
	slices.SortStableFunc(keys, func(a, b string) int { return boolInt(b == "env.name") - boolInt(a == "env.name") })
	for _, k := range keys {
		a, aok := recorded.Config[k]
		b, bok := id.Config[k]
		if a != b || aok != bok {
			diffs = append(diffs, fmt.Sprintf("%s: %s there, %s here", k, show(recorded.Config, k), show(id.Config, k)))
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	const most = 10
	if len(diffs) > most {
		diffs = append(diffs[:most], fmt.Sprintf("and %d more", len(diffs)-most))
	}
	return fmt.Errorf("%s: %w (env %s there, %s here); the settings that differ:\n  %s\n"+
		"Start this run elsewhere with -out DIR (or -set run.out=DIR), or replace the run in %s with -set checkpoint.resume=false",
		dir, ErrRunMismatch, recorded.Env, id.Env, strings.Join(diffs, "\n  "), dir)
}

// readIdentity reads a recorded identity; ok is false when there is none.
func readIdentity(path string) (runIdentity, bool, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return runIdentity{}, false, nil
	}
	if err != nil {
		return runIdentity{}, false, err
	}
	var id runIdentity
	if err := json.Unmarshal(raw, &id); err != nil {
		return runIdentity{}, false, fmt.Errorf("%s: %w", path, err)
	}
	return id, true, nil
}

// checkRunDir decides whether this run may use dir: it returns the
// checkpoint directory to resume from ("" for a new run) or an error when
// dir holds another run and resuming was asked for. It reads only.
func (t *Trainer) checkRunDir(id runIdentity) (resumeFrom string, err error) {
	dir := t.cfg.Run.Out
	ckDir := filepath.Join(dir, checkpointsDir, latestCheckpoint)
	if !t.cfg.Checkpoint.Resume {
		return "", nil
	}
	// The checkpoint's record is what a resume continues; run.json covers
	// a run stopped before its first checkpoint.
	recorded, ok, err := readIdentity(filepath.Join(ckDir, identityFile))
	if err != nil {
		return "", err
	}
	hasCheckpoint := ok
	if !ok && exists(filepath.Join(ckDir, stateFile)) {
		return "", fmt.Errorf("%w: %s holds a checkpoint without a run identity (written by an older agentrl); "+
			"start this run elsewhere with -out DIR, or replace it with -set checkpoint.resume=false", ErrRunMismatch, dir)
	}
	if !ok {
		if recorded, ok, err = readIdentity(filepath.Join(dir, identityFile)); err != nil {
			return "", err
		}
	}
	if !ok {
		if exists(filepath.Join(dir, metricsFile)) {
			return "", fmt.Errorf("%w: %s holds metrics but no run identity (written by an older agentrl); "+
				"start this run elsewhere with -out DIR, or replace it with -set checkpoint.resume=false", ErrRunMismatch, dir)
		}
		return "", nil
	}
	if err := id.mismatch(recorded, dir); err != nil {
		return "", err
	}
	if hasCheckpoint {
		return ckDir, nil
	}
	return "", nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}
