package openaiapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrl/agentrl/client/vllm"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/server/openaiapi"
	"github.com/agentrl/agentrl/text/tokenizer"
)

// tiny is a small random native model with the byte-level tokenizer.
func tiny(t testing.TB) *local.Policy {
	t.Helper()
	tok := tokenizer.New()
	cfg := native.Config{Vocab: tok.VocabSize(), DModel: 32, Layers: 1, Heads: 2, DFF: 64, MaxSeq: 1024, TieEmbeddings: true}
	m, err := native.New(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := local.New("tiny", m, tok)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// counting counts the Sample calls of a local policy. Embedding keeps its
// Tokenizer method visible to the server.
type counting struct {
	*local.Policy
	calls atomic.Int64
	seqs  atomic.Int64
}

func (c *counting) Sample(ctx context.Context, reqs []policy.Request) ([]policy.Sample, error) {
	c.calls.Add(1)
	c.seqs.Add(int64(len(reqs)))
	return c.Policy.Sample(ctx, reqs)
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// start serves p over HTTP for the test.
func start(t testing.TB, p policy.Policy, opts openaiapi.Options) (*httptest.Server, *openaiapi.Server) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	s := openaiapi.New(p, opts)
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return ts, s
}

// connect returns a client/vllm client of the server at url.
func connect(t testing.TB, url, apiKey string) *vllm.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := vllm.New(ctx, vllm.Options{
		BaseURLs: []string{url}, APIKey: apiKey, Logger: quietLogger(),
		Retry: vllm.Retry{MaxAttempts: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// post sends body (a string, sent as is, or a value to marshal) and
// returns the status and the decoded JSON reply.
func post(t testing.TB, url, path string, body any, header ...string) (int, map[string]any) {
	t.Helper()
	var data []byte
	if s, ok := body.(string); ok {
		data = []byte(s)
	} else {
		var err error
		if data, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(http.MethodPost, url+path, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return do(t, req)
}

func do(t testing.TB, req *http.Request) (int, map[string]any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: status %d, reply is not a JSON object: %v\n%s", req.Method, req.URL.Path, resp.StatusCode, err, raw)
		}
	}
	return resp.StatusCode, out
}

// prompts renders a few distinct chat prompts.
func prompts(t testing.TB, p policy.Policy, n int) [][]int {
	t.Helper()
	out := make([][]int, n)
	for i := range out {
		ids, err := p.RenderChat(context.Background(), []policy.Message{{Role: policy.RoleUser, Content: fmt.Sprintf("Turn 1:\n#P_O# question %d", i%5)}}, true)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = ids
	}
	return out
}

func closeLogProbs(a, b []float64, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] == b[i] {
			continue
		}
		if math.Abs(a[i]-b[i]) > tol {
			return false
		}
	}
	return true
}

// ids reads a JSON list of numbers.
func ids(v any) []int {
	l, _ := v.([]any)
	out := make([]int, len(l))
	for i, x := range l {
		f, _ := x.(float64)
		out[i] = int(f)
	}
	return out
}

// viaJSON returns v after a JSON round trip: what a client can receive.
// Text that is not valid UTF-8 (a byte-level token cut mid-character, which
// the random tiny model samples often) comes back with U+FFFD, as from any
// OpenAI-compatible server; everything else is unchanged.
func viaJSON[T any](t testing.TB, v T) T {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
