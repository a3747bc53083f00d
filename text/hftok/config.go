package hftok

import (
	"encoding/json"
	"fmt"
	"os"
)

// Config is what this package reads from a model's tokenizer_config.json,
// the transformers-side settings that tokenizer.json lacks.
type Config struct {
	// BOSToken, EOSToken, PadToken and UnkToken are the special tokens'
	// strings ("" when unset); look their ids up with TokenToID.
	BOSToken, EOSToken, PadToken, UnkToken string
	// AdditionalSpecialTokens lists additional_special_tokens.
	AdditionalSpecialTokens []string
	// CleanUpTokenizationSpaces is clean_up_tokenization_spaces (false when
	// absent); pass it to DecodeOptions to decode as transformers does.
	CleanUpTokenizationSpaces bool
	// AddBOSToken and AddEOSToken are add_bos_token and add_eos_token, nil
	// when absent.
	AddBOSToken, AddEOSToken *bool
	// ChatTemplate is chat_template when it is a single string.
	ChatTemplate string
}

// LoadConfig reads a tokenizer_config.json file; see ParseConfig.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("hftok: %w", err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return c, nil
}

// ParseConfig parses the contents of a tokenizer_config.json file. Token
// fields may be strings or {"content": ...} objects.
func ParseConfig(data []byte) (*Config, error) {
	var cj struct {
		BOS          json.RawMessage   `json:"bos_token"`
		EOS          json.RawMessage   `json:"eos_token"`
		Pad          json.RawMessage   `json:"pad_token"`
		Unk          json.RawMessage   `json:"unk_token"`
		Additional   []json.RawMessage `json:"additional_special_tokens"`
		CleanUp      *bool             `json:"clean_up_tokenization_spaces"`
		AddBOS       *bool             `json:"add_bos_token"`
		AddEOS       *bool             `json:"add_eos_token"`
		ChatTemplate json.RawMessage   `json:"chat_template"`
	}
	if err := json.Unmarshal(data, &cj); err != nil {
		return nil, fmt.Errorf("hftok: tokenizer_config.json: %w", err)
	}
	c := &Config{AddBOSToken: cj.AddBOS, AddEOSToken: cj.AddEOS}
	if cj.CleanUp != nil {
		c.CleanUpTokenizationSpaces = *cj.CleanUp
	}
	var err error
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  *string
	}{{"bos_token", cj.BOS, &c.BOSToken}, {"eos_token", cj.EOS, &c.EOSToken}, {"pad_token", cj.Pad, &c.PadToken}, {"unk_token", cj.Unk, &c.UnkToken}} {
		if *f.dst, err = configToken(f.raw); err != nil {
			return nil, fmt.Errorf("hftok: tokenizer_config.json: %s: %w", f.name, err)
		}
	}
	for i, raw := range cj.Additional {
		s, err := configToken(raw)
		if err != nil {
			return nil, fmt.Errorf("hftok: tokenizer_config.json: additional_special_tokens[%d]: %w", i, err)
		}
		c.AdditionalSpecialTokens = append(c.AdditionalSpecialTokens, s)
	}
	if !isNull(cj.ChatTemplate) {
		_ = json.Unmarshal(cj.ChatTemplate, &c.ChatTemplate) // a list of named templates is left out
	}
	return c, nil
}

// configToken reads a token given as null, a string or an object with a
// content field.
func configToken(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", fmt.Errorf("neither a string nor an object with content: %w", err)
	}
	return obj.Content, nil
}
