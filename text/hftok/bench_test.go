package hftok

import "testing"

// benchEncode encodes texts once per iteration and reports tokens/s.
func benchEncode(b *testing.B, tok *Tokenizer, texts []string, cold bool) {
	n := 0
	for _, s := range texts {
		n += len(s)
	}
	b.SetBytes(int64(n))
	tokens := 0
	var buf []int
	b.ResetTimer()
	for b.Loop() {
		if cold {
			tok.model.cache.Clear()
			tok.model.cached.Store(0)
		}
		tokens = 0
		for _, s := range texts {
			buf = tok.AppendEncode(buf[:0], s, EncodeOptions{AllowSpecial: true})
			tokens += len(buf)
		}
	}
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkEncode measures Encode on the Qwen3 file over the reference
// corpus, with the BPE cache warm (the steady state) and cleared before
// every pass (cold).
func BenchmarkEncode(b *testing.B) {
	path := needFile(b, qwen3File)
	tok := loadReal(b, path)
	texts := referenceCorpus()
	b.Run("warm", func(b *testing.B) { benchEncode(b, tok, texts, false) })
	b.Run("cold", func(b *testing.B) { benchEncode(b, tok, texts, true) })
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
