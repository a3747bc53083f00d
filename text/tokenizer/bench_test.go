package tokenizer

import (
	"strings"
	"testing"
)

// benchEncode encodes texts once per iteration and reports throughput.
func benchEncode(b *testing.B, tok *Tokenizer, texts []string, fresh bool) {
	n := 0
	for _, s := range texts {
		n += len(s)
	}
	b.SetBytes(int64(n))
	tokens := 0
	var buf []int
	b.ResetTimer()
	for b.Loop() {
		if fresh {
			tok.mu.Lock()
			clear(tok.cache)
			tok.mu.Unlock()
		}
		tokens = 0
		for _, s := range texts {
			buf = tok.AppendEncode(buf[:0], s)
			tokens += len(buf)
		}
	}
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
	b.ReportMetric(float64(tokens)/float64(len(texts)), "tokens/text")
}

// BenchmarkEncode measures Encode on held-out user turns (instruction text
// around a Sokoban observation), the rollout's hot path.
func BenchmarkEncode(b *testing.B) {
	benchEncode(b, trained(), corpora(2, 200)["user turn"], false)
}

// BenchmarkEncodeObservation measures Encode on bare Sokoban observations.
func BenchmarkEncodeObservation(b *testing.B) {
	benchEncode(b, trained(), corpora(2, 200)["sokoban obs"], false)
}

// BenchmarkEncodeColdCache clears the pre-token cache every iteration.
func BenchmarkEncodeColdCache(b *testing.B) {
	benchEncode(b, trained(), corpora(2, 200)["user turn"], true)
}

// BenchmarkEncodeLongPiece encodes one 64 KB piece (heap merge path).
func BenchmarkEncodeLongPiece(b *testing.B) {
	benchEncode(b, trained(), []string{strings.Repeat("Sokoban", 64<<10/7)}, false)
}

// BenchmarkTrain1MB trains a 1024-id vocabulary on about 1 MB of synthetic
// conversations.
func BenchmarkTrain1MB(b *testing.B) {
	corpus := trainingCorpus(1, 1<<20)
	n := 0
	for _, s := range corpus {
		n += len(s)
	}
	b.SetBytes(int64(n))
	var tok *Tokenizer
	for b.Loop() {
		var err error
		if tok, err = Train(corpus, 1024, TrainOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(tok.VocabSize()), "vocab")
}

// BenchmarkTrain1MBDiverse trains on 1 MB of more varied text (random words
// from the synthetic corpus shuffled with random numbers), so that all 4096
// ids are learned.
func BenchmarkTrain1MBDiverse(b *testing.B) {
	corpus := diverseCorpus(1 << 20)
	b.SetBytes(1 << 20)
	var tok *Tokenizer
	for b.Loop() {
		var err error
		if tok, err = Train(corpus, 4096, TrainOptions{MinFrequency: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(tok.VocabSize()), "vocab")
}
