package openaiapi_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/server/openaiapi"
	"github.com/agentrl/agentrl/text/tokenizer"
)

// BenchmarkServeThroughput measures completions of 32 tokens with 1 and 32
// concurrent clients, on the tiny test model and on a small one
// (DModel 128, 4 layers) where the forward pass, which batching shares,
// weighs more than the per-sequence sampling work. The 32-client run
// reports its speedup over the 1-client run (x_vs_1client) when both ran.
func BenchmarkServeThroughput(b *testing.B) {
	b.Run("model=tiny", func(b *testing.B) { benchThroughput(b, tiny(b)) })
	b.Run("model=small", func(b *testing.B) {
		tok := tokenizer.New()
		m, err := native.New(native.Config{Vocab: tok.VocabSize(), DModel: 128, Layers: 4, Heads: 4, DFF: 512, MaxSeq: 1024, TieEmbeddings: true}, 1)
		if err != nil {
			b.Fatal(err)
		}
		p, err := local.New("small", m, tok)
		if err != nil {
			b.Fatal(err)
		}
		benchThroughput(b, p)
	})
}

func benchThroughput(b *testing.B, p *local.Policy) {
	const tokens = 32
	ts, srv := start(b, p, openaiapi.Options{})
	prompt := prompts(b, p, 1)[0]
	tr := &http.Transport{MaxIdleConns: 128, MaxIdleConnsPerHost: 128}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	var seed atomic.Int64
	one := func() error {
		body := fmt.Sprintf(`{"prompt": %s, "max_tokens": %d, "seed": %d, "stop_token_ids": [], "ignore_eos": true, "logprobs": 0, "return_token_ids": true}`,
			jsonInts(prompt), tokens, seed.Add(1))
		resp, err := hc.Post(ts.URL+"/v1/completions", "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	rates := map[int]float64{}
	for _, clients := range []int{1, 32} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			before := srv.Stats()
			var next atomic.Int64
			var wg sync.WaitGroup
			var failed atomic.Value
			b.ResetTimer()
			start := time.Now()
			for range clients {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						if err := one(); err != nil {
							failed.Store(err)
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if err, _ := failed.Load().(error); err != nil {
				b.Fatal(err)
			}
			rate := float64(b.N) / elapsed.Seconds()
			rates[clients] = rate
			b.ReportMetric(rate, "req/s")
			b.ReportMetric(rate*tokens, "tok/s")
			after := srv.Stats()
			if calls := after.SampleCalls - before.SampleCalls; calls > 0 {
				b.ReportMetric(float64(after.Sequences-before.Sequences)/float64(calls), "seqs/call")
			}
			if clients > 1 && rates[1] > 0 {
				b.ReportMetric(rate/rates[1], "x_vs_1client")
			}
		})
	}
}

func jsonInts(ids []int) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, id)
	}
	b.WriteByte(']')
	return b.String()
}
