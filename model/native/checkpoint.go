package native

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/internal/atomicdir"
)

// Checkpoint file names inside a checkpoint directory.
const (
	ConfigFile    = "config.json"
	WeightsFile   = "model.safetensors"
	OptimizerFile = "optimizer.safetensors"
)

// Checkpoint is the content of a checkpoint directory.
type Checkpoint struct {
	Model     *Model
	Optimizer *AdamW            // nil when the checkpoint has no optimizer state
	Extra     map[string][]byte // every other file (tokenizer.json, trainer state, ...)
}

// SaveCheckpoint writes dir containing config.json, model.safetensors,
// optimizer.safetensors (when opt is non-nil) and one file per extra entry.
//
// The write is atomic with respect to crashes and readers: everything is
// written and fsynced into a fresh temporary directory next to dir, which
// then replaces dir (see package internal/atomicdir), so dir is always
// either the old or the new complete checkpoint.
func SaveCheckpoint(dir string, m *Model, opt *AdamW, extra map[string][]byte) error {
	if err := checkExtraNames(extra); err != nil {
		return err
	}
	return atomicdir.Write(dir, func(tmp string) error { return WriteCheckpoint(tmp, m, opt, extra) })
}

func checkExtraNames(extra map[string][]byte) error {
	for name := range extra {
		if name == "" || name != filepath.Base(name) || strings.HasPrefix(name, ".") ||
			name == ConfigFile || name == WeightsFile || name == OptimizerFile {
			return fmt.Errorf("native: checkpoint: invalid extra file name %q", name)
		}
	}
	return nil
}

// WriteCheckpoint writes the files of SaveCheckpoint into dir (created if
// needed), each fsynced, without the atomic replacement: for callers that
// assemble a larger checkpoint (the actor beside its critic and reference)
// and replace it as a whole.
func WriteCheckpoint(dir string, m *Model, opt *AdamW, extra map[string][]byte) error {
	if err := checkExtraNames(extra); err != nil {
		return err
	}
	if m.lora != nil {
		return errLoRACheckpoint
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("native: checkpoint: %w", err)
	}
	cfg, err := json.MarshalIndent(m.cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("native: checkpoint: %w", err)
	}
	files := map[string][]byte{ConfigFile: append(cfg, '\n')}
	var buf bytes.Buffer
	if err := WriteSafetensors(&buf, namedTensors(m.tensors, "", m.params),
		map[string]string{"format": "agentrl-native", "layout": "linear weights are [in, out]; y = x·W"}); err != nil {
		return err
	}
	files[WeightsFile] = buf.Bytes()
	if opt != nil {
		ob, err := encodeOptimizer(m, opt)
		if err != nil {
			return err
		}
		files[OptimizerFile] = ob
	}
	for name, data := range extra {
		files[name] = data
	}
	for name, data := range files {
		if err := writeSynced(filepath.Join(dir, name), data); err != nil {
			return err
		}
	}
	return nil
}

// errLoRACheckpoint refuses to write a model with adapters as a full
// checkpoint, which would store the base without them.
var errLoRACheckpoint = errors.New("native: checkpoint: the model has LoRA adapters: save them with SavePEFT " +
	"(the base model is unchanged), or MergeLoRA first")

// WriteOptimizer writes opt, the AdamW state of m, as OptimizerFile in dir
// (created if needed), fsynced. It is for checkpoints whose weights are
// stored in another layout (a Hugging Face directory written by SaveHF,
// adapters written by SavePEFT): the optimizer state stays in the native
// layout beside them, under the names of the trained tensors (the
// adapters' PEFT names for a model with adapters).
func WriteOptimizer(dir string, m *Model, opt *AdamW) error {
	data, err := encodeOptimizer(m, opt)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("native: checkpoint: %w", err)
	}
	return writeSynced(filepath.Join(dir, OptimizerFile), data)
}

// LoadOptimizer reads the OptimizerFile in dir, written for m by
// WriteCheckpoint or WriteOptimizer; for a model with adapters, the
// adapters must be those it was written for. A missing file is an error
// that wraps fs.ErrNotExist.
func LoadOptimizer(dir string, m *Model) (*AdamW, error) {
	raw, err := os.ReadFile(filepath.Join(dir, OptimizerFile))
	if err != nil {
		return nil, fmt.Errorf("native: checkpoint: %w", err)
	}
	return decodeOptimizer(m, raw)
}

// encodeOptimizer returns the safetensors file of opt: the moments under
// the names of m's trained tensors prefixed exp_avg. and exp_avg_sq., and
// the scalars as metadata.
func encodeOptimizer(m *Model, opt *AdamW) ([]byte, error) {
	_, _, ts := m.trainable()
	if len(opt.m) != m.NumTrainable() {
		return nil, fmt.Errorf("native: checkpoint: optimizer has state for %d parameters, model trains %d", len(opt.m), m.NumTrainable())
	}
	var ob bytes.Buffer
	tensors := append(namedTensors(ts, "exp_avg.", opt.m), namedTensors(ts, "exp_avg_sq.", opt.v)...)
	meta := map[string]string{
		"step":         strconv.Itoa(opt.step),
		"beta1":        fmtFloat(opt.Beta1),
		"beta2":        fmtFloat(opt.Beta2),
		"eps":          fmtFloat(opt.Eps),
		"weight_decay": fmtFloat(opt.WeightDecay),
	}
	if err := WriteSafetensors(&ob, tensors, meta); err != nil {
		return nil, err
	}
	return ob.Bytes(), nil
}

// decodeOptimizer reads a file encodeOptimizer wrote for m.
func decodeOptimizer(m *Model, raw []byte) (*AdamW, error) {
	tensors, meta, err := ReadSafetensors(raw)
	if err != nil {
		return nil, fmt.Errorf("native: checkpoint: %s: %w", OptimizerFile, err)
	}
	_, _, ts := m.trainable()
	opt := &AdamW{}
	opt.m, opt.v = residentPair(m.NumTrainable())
	var mt, vt []NamedTensor
	for _, t := range tensors {
		if strings.HasPrefix(t.Name, "exp_avg_sq.") {
			vt = append(vt, t)
		} else {
			mt = append(mt, t)
		}
	}
	if err := loadTensors(ts, OptimizerFile, "exp_avg.", mt, opt.m); err != nil {
		return nil, err
	}
	if err := loadTensors(ts, OptimizerFile, "exp_avg_sq.", vt, opt.v); err != nil {
		return nil, err
	}
	if opt.step, err = strconv.Atoi(meta["step"]); err != nil || opt.step < 0 {
		return nil, fmt.Errorf("native: checkpoint: %s: bad step %q", OptimizerFile, meta["step"])
	}
	for key, dst := range map[string]*float32{"beta1": &opt.Beta1, "beta2": &opt.Beta2, "eps": &opt.Eps, "weight_decay": &opt.WeightDecay} {
		x, err := strconv.ParseFloat(meta[key], 32)
		if err != nil {
			return nil, fmt.Errorf("native: checkpoint: %s: bad %s %q", OptimizerFile, key, meta[key])
		}
		*dst = float32(x)
	}
	return opt, nil
}

func fmtFloat(x float32) string { return strconv.FormatFloat(float64(x), 'g', -1, 32) }

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("native: checkpoint: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("native: checkpoint: writing %s: %w", path, err)
	}
	return nil
}

// namedTensors returns views of flat (laid out as ts describes) as named
// tensors.
func namedTensors(ts []TensorInfo, prefix string, flat []float32) []NamedTensor {
	out := make([]NamedTensor, len(ts))
	for i, t := range ts {
		out[i] = NamedTensor{Name: prefix + t.Name, Shape: t.Shape, Data: flat[t.Offset : t.Offset+t.Size]}
	}
	return out
}

// loadTensors copies tensors into flat (laid out as ts describes),
// requiring exactly the tensor set ts with matching shapes.
func loadTensors(ts []TensorInfo, file, prefix string, tensors []NamedTensor, flat []float32) error {
	byName := make(map[string]NamedTensor, len(tensors))
	for _, t := range tensors {
		byName[t.Name] = t
	}
	for _, t := range ts {
		got, ok := byName[prefix+t.Name]
		if !ok {
			return fmt.Errorf("native: checkpoint: %s has no tensor %q", file, prefix+t.Name)
		}
		if !slices.Equal(got.Shape, t.Shape) {
			return fmt.Errorf("native: checkpoint: %s: tensor %q has shape %v, the config needs %v", file, prefix+t.Name, got.Shape, t.Shape)
		}
		copy(flat[t.Offset:t.Offset+t.Size], got.Data)
		delete(byName, prefix+t.Name)
	}
	for name := range byName {
		return fmt.Errorf("native: checkpoint: %s has unexpected tensor %q", file, name)
	}
	return nil
}

// LoadCheckpoint reads a directory written by SaveCheckpoint.
func LoadCheckpoint(dir string) (*Checkpoint, error) {
	raw, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		return nil, fmt.Errorf("native: checkpoint: %w", err)
	}
	var cfg Config
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("native: checkpoint: %s: %w", ConfigFile, err)
	}
	m, err := newZero(cfg)
	if err != nil {
		return nil, fmt.Errorf("native: checkpoint: %s: %w", ConfigFile, err)
	}
	raw, err = os.ReadFile(filepath.Join(dir, WeightsFile))
	if err != nil {
		return nil, fmt.Errorf("native: checkpoint: %w", err)
	}
	tensors, _, err := ReadSafetensors(raw)
	if err != nil {
		return nil, fmt.Errorf("native: checkpoint: %s: %w", WeightsFile, err)
	}
	if err := loadTensors(m.tensors, WeightsFile, "", tensors, m.params); err != nil {
		return nil, err
	}
	ck := &Checkpoint{Model: m, Extra: map[string][]byte{}}

	raw, err = os.ReadFile(filepath.Join(dir, OptimizerFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("native: checkpoint: %w", err)
	default:
		if ck.Optimizer, err = decodeOptimizer(m, raw); err != nil {
			return nil, err
		}
	}

	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("native: checkpoint: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || name == ConfigFile || name == WeightsFile || name == OptimizerFile {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("native: checkpoint: %w", err)
		}
		ck.Extra[name] = data
	}
	return ck, nil
}
