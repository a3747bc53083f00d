package view

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentrl/agentrl/text/hftok"
	"github.com/agentrl/agentrl/text/tokenizer"
)

// tokenizerRetry is how long a run whose tokenizer was not found waits
// before it is looked for again (a new run writes its first checkpoint
// later).
const tokenizerRetry = 10 * time.Second

// tokenBytes returns the bytes of one token id, false for an id the
// tokenizer does not have.
type tokenBytes func(id int) ([]byte, bool)

// tokenCache is a run's tokenizer, loaded when first needed.
type tokenCache struct {
	bytes  tokenBytes
	path   string
	err    error
	tried  time.Time
	loaded bool
}

// decoder returns the run's token decoder, the file it came from, and
// why there is none.
func (r *run) decoder() (tokenBytes, string, error) {
	c := &r.tok
	if c.loaded || time.Since(c.tried) < tokenizerRetry {
		return c.bytes, c.path, c.err
	}
	c.tried = time.Now()
	cfg, _ := r.config.get(filepath.Join(r.dir, configFile))
	c.bytes, c.path, c.err = loadTokenizer(tokenizerCandidates(r.dir, cfg.Model.Init))
	c.loaded = c.err == nil
	return c.bytes, c.path, c.err
}

// tokenizerCandidates are the files that may hold a run's tokenizer, in
// the order they are tried: the latest checkpoint's, its LoRA base
// model's (base.json, or the adapter's base_model_name_or_path), then
// model.init's.
func tokenizerCandidates(dir, modelInit string) []string {
	ck := filepath.Join(dir, "checkpoints", "latest")
	out := []string{filepath.Join(ck, "tokenizer.json")}
	var base struct {
		Dir string `json:"dir"`
	}
	if raw, err := os.ReadFile(filepath.Join(ck, "base.json")); err == nil && json.Unmarshal(raw, &base) == nil && base.Dir != "" {
		out = append(out, filepath.Join(base.Dir, "tokenizer.json"))
	}
	var adapter struct {
		Base string `json:"base_model_name_or_path"`
	}
	if raw, err := os.ReadFile(filepath.Join(ck, "adapter", "adapter_config.json")); err == nil && json.Unmarshal(raw, &adapter) == nil && adapter.Base != "" {
		out = append(out, filepath.Join(adapter.Base, "tokenizer.json"))
	}
	if modelInit != "" {
		out = append(out, filepath.Join(modelInit, "tokenizer.json"))
	}
	return out
}

// loadTokenizer loads the first of paths that exists: agentrl's own
// tokenizer file or a Hugging Face tokenizer.json.
func loadTokenizer(paths []string) (tokenBytes, string, error) {
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var head struct {
			Format string `json:"format"`
		}
		if json.Unmarshal(raw, &head) == nil && head.Format == tokenizer.FormatName {
			t, err := tokenizer.Load(strings.NewReader(string(raw)))
			if err != nil {
				return nil, p, err
			}
			return func(id int) ([]byte, bool) {
				b, err := t.TokenBytes(id)
				return b, err == nil
			}, p, nil
		}
		t, err := hftok.Parse(raw)
		if err != nil {
			return nil, p, fmt.Errorf("%s: %w", p, err)
		}
		return t.TokenBytes, p, nil
	}
	return nil, "", fmt.Errorf("no tokenizer found (looked for %s)", strings.Join(paths, ", "))
}

// pieces decodes ids one token at a time: the text each token completes.
// A byte-level token that ends inside a multi-byte character adds its
// bytes to the next token's text, so the pieces join to the decoded text;
// an id the tokenizer lacks reads <id>.
func pieces(ids []int, bytesOf tokenBytes) []string {
	out := make([]string, len(ids))
	var pending []byte
	for i, id := range ids {
		b, ok := bytesOf(id)
		if !ok {
			out[i] = fmt.Sprintf("<%d>", id)
			continue
		}
		pending = append(pending, b...)
		n := completeRunes(pending)
		out[i] = strings.ToValidUTF8(string(pending[:n]), "\uFFFD")
		pending = pending[n:]
	}
	if len(pending) > 0 && len(out) > 0 {
		out[len(out)-1] += "\uFFFD"
	}
	return out
}

// completeRunes is the length of the longest prefix of b that does not
// end inside a UTF-8 character.
func completeRunes(b []byte) int {
	for back := 1; back <= utf8.UTFMax && back <= len(b); back++ {
		i := len(b) - back
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}
