package local

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/text/tokenizer"
)

// TokenizerFile is the name of the tokenizer inside a checkpoint directory,
// stored as an extra file of native.SaveCheckpoint.
const TokenizerFile = "tokenizer.json"

// LoadCheckpoint loads the checkpoint in dir and wraps it as a Policy named
// after the directory: a Hugging Face model directory (see IsHFDir and
// LoadHF, with the context of its max_position_embeddings), a native
// checkpoint (written by native.SaveCheckpoint with the agentrl tokenizer
// as the extra file TokenizerFile), or LoRA adapters: a PEFT adapter
// directory (adapter_config.json, see native.LoadPEFT), or a checkpoint
// directory without a model of its own that holds one as adapter/ (the
// trainer's checkpoints of runs with model.lora), loaded over the base
// model that adapter_config.json's base_model_name_or_path names, which
// must be a local checkpoint of either kind (a relative path counts from
// the working directory, or else from the adapter directory). The
// optimizer state, if any, is ignored.
func LoadCheckpoint(dir string) (*Policy, error) {
	return LoadCheckpointNamed(dir, "")
}

// TinkerRecordFile is the file of a checkpoint whose weights are on a
// Tinker server, as a run with tinker.url writes it.
const TinkerRecordFile = "tinker.json"

// LoadCheckpointNamed is LoadCheckpoint with the policy's name given; an
// empty name means the base name of dir.
func LoadCheckpointNamed(dir, name string) (*Policy, error) {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("local: checkpoint %s does not exist", dir)
	case err != nil:
		return nil, fmt.Errorf("local: checkpoint: %w", err)
	case !st.IsDir():
		return nil, fmt.Errorf("local: checkpoint %s is not a directory", dir)
	}
	if adapter := adapterDir(dir); adapter != "" {
		return loadAdapter(dir, adapter, name)
	}
	if IsHFDir(dir) {
		return LoadHF(dir, name, 0)
	}
	if exists(filepath.Join(dir, TinkerRecordFile)) && !exists(filepath.Join(dir, native.ConfigFile)) {
		return nil, fmt.Errorf("local: checkpoint %s was written by a run on a Tinker server (tinker.url): its weights stay on that server, at the paths %s names", dir, TinkerRecordFile)
	}
	ck, err := native.LoadCheckpoint(dir)
	if err != nil {
		return nil, fmt.Errorf("local: checkpoint %s: %w", dir, err)
	}
	raw, ok := ck.Extra[TokenizerFile]
	if !ok {
		return nil, fmt.Errorf("local: checkpoint %s has no %s", dir, TokenizerFile)
	}
	tok, err := tokenizer.Load(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("local: checkpoint %s: %s: %w", dir, TokenizerFile, err)
	}
	if name == "" {
		name = filepath.Base(filepath.Clean(dir))
	}
	p, err := New(name, ck.Model, tok)
	if err != nil {
		return nil, fmt.Errorf("local: checkpoint %s: %w", dir, err)
	}
	return p, nil
}

// adapterDir returns the PEFT adapter directory of dir, or "": dir itself
// when it holds an adapter_config.json, or dir/adapter when dir holds no
// model of its own.
func adapterDir(dir string) string {
	if exists(filepath.Join(dir, native.PEFTConfigFile)) {
		return dir
	}
	sub := filepath.Join(dir, "adapter")
	if exists(filepath.Join(sub, native.PEFTConfigFile)) && !exists(filepath.Join(dir, native.ConfigFile)) {
		return sub
	}
	return ""
}

// loadAdapter loads the adapters in adapter over their base model, as the
// policy of checkpoint dir.
func loadAdapter(dir, adapter, name string) (*Policy, error) {
	_, base, err := native.ReadPEFTConfig(adapter)
	if err != nil {
		return nil, fmt.Errorf("local: checkpoint %s: %w", dir, err)
	}
	if base == "" {
		return nil, fmt.Errorf("local: checkpoint %s: %s names no base model (base_model_name_or_path)", dir, filepath.Join(adapter, native.PEFTConfigFile))
	}
	baseDir := base
	if !filepath.IsAbs(base) && !exists(base) && exists(filepath.Join(adapter, base)) {
		baseDir = filepath.Join(adapter, base)
	}
	if st, err := os.Stat(baseDir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("local: checkpoint %s: the adapters' base model %q is not a local directory (download it, and set base_model_name_or_path to its path)", dir, base)
	}
	if adapterDir(baseDir) != "" {
		return nil, fmt.Errorf("local: checkpoint %s: the adapters' base model %s is itself an adapter", dir, baseDir)
	}
	if name == "" {
		name = filepath.Base(filepath.Clean(dir))
	}
	p, err := LoadCheckpointNamed(baseDir, name)
	if err != nil {
		return nil, fmt.Errorf("local: checkpoint %s: the adapters' base model: %w", dir, err)
	}
	m := p.Lock()
	err = native.LoadPEFT(adapter, m)
	p.Unlock()
	if err != nil {
		return nil, fmt.Errorf("local: checkpoint %s: %w", dir, err)
	}
	return p, nil
}
