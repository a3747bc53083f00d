package local

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/agentrl/agentrl/model/native"
)

// WithPEFT returns a new Policy named name (empty: the base name of dir)
// that computes with a copy of p's model with the PEFT LoRA adapter in dir
// on it (native.LoadPEFT), and shares p's text side: the policy
// LoadCheckpoint gives for dir when dir's base_model_name_or_path is p's
// checkpoint, built without reading the base again. The copy costs the
// model's memory again (its parameters, plus the merged weights sampling
// computes with), a price that fits the small models served here; p itself
// is unchanged. p's model must have no adapters of its own: an adapter's
// weights are deltas over the base weights, not over another adapter's.
//
// The adapter is checked against the model (native.CheckPEFT: its
// configuration, rank and file size) before the model is copied, so that
// a bad or hostile adapter costs no copy.
func (p *Policy) WithPEFT(dir, name string) (*Policy, error) {
	m := p.Lock()
	hasLoRA := m.LoRA() != nil
	var c *native.Model
	var err error
	if !hasLoRA {
		if err = native.CheckPEFT(dir, m); err == nil {
			c = m.Clone()
		}
	}
	p.Unlock()
	if hasLoRA {
		return nil, errors.New("local: the policy's model already has LoRA adapters; load adapters over its base model instead")
	}
	if err != nil {
		return nil, fmt.Errorf("local: adapter %s: %w", dir, err)
	}
	if err := native.LoadPEFT(dir, c); err != nil {
		return nil, fmt.Errorf("local: adapter %s: %w", dir, err)
	}
	if name == "" {
		name = filepath.Base(filepath.Clean(dir))
	}
	return &Policy{model: c, codec: p.codec, tok: p.tok, hf: p.hf, name: name}, nil
}
