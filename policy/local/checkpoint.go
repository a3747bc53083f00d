package local

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentrl/agentrl/policy/native"
	"github.com/agentrl/agentrl/policy/tokenizer"
)

// TokenizerFile is the name of the tokenizer inside a checkpoint directory,
// stored as an extra file of native.SaveCheckpoint.
const TokenizerFile = "tokenizer.json"

// LoadCheckpoint loads the checkpoint in dir and wraps it as a Policy named
// after the directory: a Hugging Face model directory (see IsHFDir and
// LoadHF, with the context of its max_position_embeddings), or a native
// checkpoint (written by native.SaveCheckpoint with the agentrl tokenizer
// as the extra file TokenizerFile). The optimizer state, if any, is
// ignored.
func LoadCheckpoint(dir string) (*Policy, error) {
	return LoadCheckpointNamed(dir, "")
}

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
	if IsHFDir(dir) {
		return LoadHF(dir, name, 0)
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
