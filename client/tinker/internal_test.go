package tinker

import (
	"net/http"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentrl/agentrl/client/tinker/internal/tinkerpb"
)

// TestRetryAfter: the SDK's _base_client.py _parse_retry_after_header
// reads retry-after-ms, then retry-after as (possibly fractional) seconds,
// then as an HTTP date, and honours at most 60 s.
func TestRetryAfter(t *testing.T) {
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	future := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	past := time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		h        http.Header
		min, max time.Duration
	}{
		{h(), 0, 0},
		{h("Retry-After", "2"), 2 * time.Second, 2 * time.Second},
		{h("Retry-After", "0.5"), 500 * time.Millisecond, 500 * time.Millisecond},
		{h("Retry-After", "3600"), time.Minute, time.Minute},
		{h("Retry-After", "-1"), 0, 0},
		{h("Retry-After", "soon"), 0, 0},
		{h("Retry-After", future), 28 * time.Second, 30 * time.Second},
		{h("Retry-After", past), 0, 0},
		{h("Retry-After-Ms", "250", "Retry-After", "9"), 250 * time.Millisecond, 250 * time.Millisecond},
		{h("Retry-After-Ms", "junk", "Retry-After", "1"), time.Second, time.Second},
	} {
		if got := retryAfter(tc.h); got < tc.min || got > tc.max {
			t.Errorf("%v: %v, want [%v, %v]", tc.h, got, tc.min, tc.max)
		}
	}
}

func TestBackoffDelays(t *testing.T) {
	o := Options{RetryBaseDelay: 100 * time.Millisecond, RetryMaxDelay: time.Second}
	o.setDefaults()
	c := &Client{opts: o}
	c.rng = newJitter()
	for retry, full := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		full *= time.Millisecond
		d := c.delay(retry)
		if d > full || d < full*3/4 {
			t.Errorf("retry %d: %v, want [%v, %v]", retry, d, full*3/4, full)
		}
	}
	// The jitter source is seeded: the same sequence every run.
	c1, c2 := &Client{opts: o, rng: newJitter()}, &Client{opts: o, rng: newJitter()}
	for i := range 5 {
		if c1.delay(i) != c2.delay(i) {
			t.Fatal("jitter is not deterministic")
		}
	}
}

func TestOptionDefaults(t *testing.T) {
	var o Options
	o.setDefaults()
	if o.RequestTimeout != time.Minute || o.FutureTimeout != 30*time.Minute || o.MaxRetries != 5 ||
		o.HeartbeatInterval != 10*time.Second || o.PollTimeout != 330*time.Second || o.Logger == nil {
		t.Fatalf("%+v", o)
	}
	o = Options{FutureTimeout: -1, MaxRetries: -1, HeartbeatInterval: -1}
	o.setDefaults()
	if o.FutureTimeout != 0 || o.MaxRetries != 0 || o.HeartbeatInterval >= 0 {
		t.Fatalf("%+v", o)
	}
}

func TestNormalizeBaseURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://h:8000":                  "http://h:8000",
		"http://h:8000/":                 "http://h:8000",
		"http://h:8000/api/v1":           "http://h:8000",
		"http://h:8000/api/v1/":          "http://h:8000",
		"https://h/services/tinker-prod": "https://h/services/tinker-prod",
	} {
		if got, err := normalizeBaseURL(in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"h:8000", "ftp://h", "http://h?x=1", ""} {
		if _, err := normalizeBaseURL(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestWireSeed(t *testing.T) {
	for _, s := range []uint64{0, 1, 100, 1<<31 - 1} {
		if got := wireSeed(s); got != int64(s) {
			t.Errorf("wireSeed(%d) = %d", s, got)
		}
	}
	seen := map[int64]uint64{}
	for _, s := range []uint64{1 << 31, 1<<31 + 1, 1 << 40, 1<<63 + 5, ^uint64(0)} {
		got := wireSeed(s)
		if got < 0 || got >= 1<<31 {
			t.Errorf("wireSeed(%d) = %d out of range", s, got)
		}
		if prev, ok := seen[got]; ok {
			t.Errorf("wireSeed(%d) = wireSeed(%d)", s, prev)
		}
		seen[got] = s
	}
}

// generatedRequest builds r as the generated ForwardBackwardRequest of
// internal/tinkerpb.
func generatedRequest(t *testing.T, r ForwardBackwardRequest, forwardOnly bool) *tinkerpb.ForwardBackwardRequest {
	t.Helper()
	m := &tinkerpb.ForwardBackwardRequest{ModelId: r.ModelID, LossFn: r.ForwardBackwardInput.LossFn, ForwardOnly: forwardOnly,
		LossFnConfig: r.ForwardBackwardInput.LossFnConfig}
	if r.SeqID != nil {
		m.SeqId = int32(*r.SeqID)
	}
	for _, d := range r.ForwardBackwardInput.Data {
		pd := &tinkerpb.Datum{LossFnInputs: map[string]*tinkerpb.Tensor{}}
		for _, c := range d.ModelInput.Chunks {
			toks, err := int32Bytes(c.Tokens)
			if err != nil {
				t.Fatal(err)
			}
			pd.ModelInput = append(pd.ModelInput, &tinkerpb.Chunk{Chunk: &tinkerpb.Chunk_EncodedText{EncodedText: &tinkerpb.EncodedTextChunk{Tokens: toks}}})
		}
		for k, td := range d.LossFnInputs {
			pt := &tinkerpb.Tensor{}
			for _, s := range td.Shape {
				pt.Shape = append(pt.Shape, int64(s))
			}
			var vals []byte
			if td.DType == DTypeInt64 {
				pt.Dtype = tinkerpb.DType_DTYPE_INT64
				var err error
				if vals, err = int64Bytes(td.Data); err != nil {
					t.Fatal(err)
				}
			} else {
				pt.Dtype, vals = tinkerpb.DType_DTYPE_FLOAT32, float32Bytes(td.Data)
			}
			if td.SparseCrowIndices != nil {
				pt.Encoding = &tinkerpb.Tensor_SparseCsr{SparseCsr: &tinkerpb.SparseCsr{Values: vals,
					CrowIndices: intsAsInt64Bytes(td.SparseCrowIndices), ColIndices: intsAsInt64Bytes(td.SparseColIndices)}}
			} else {
				pt.Encoding = &tinkerpb.Tensor_Dense{Dense: vals}
			}
			pd.LossFnInputs[k] = pt
		}
		m.Data = append(m.Data, pd)
	}
	return m
}

// TestMarshalMatchesGenerated: the hand-ordered encoder of
// ForwardBackwardRequest writes the message the generated code of the
// schema describes, field for field, edges included (empty chunks and
// tensors, zero values in maps, a negative seq_id, no data).
func TestMarshalMatchesGenerated(t *testing.T) {
	seq, neg, zero := 7, -2, 0
	reqs := []ForwardBackwardRequest{
		{},
		{ModelID: "m", SeqID: &zero},
		{ModelID: "m", SeqID: &neg, ForwardBackwardInput: ForwardBackwardInput{LossFn: LossCrossEntropy, LossFnConfig: map[string]float64{"z": 0, "a": -1}}},
		{ModelID: "m", SeqID: &seq, ForwardBackwardInput: ForwardBackwardInput{LossFn: LossPPO, Data: []Datum{
			{ModelInput: TokensInput(nil), LossFnInputs: map[string]TensorData{"weights": Floats(nil), "target_tokens": Ints(nil)}},
			{ModelInput: ModelInput{Chunks: []Chunk{{Tokens: []int{1, -1, 1 << 30}}, {Type: ChunkEncodedText}}},
				LossFnInputs: map[string]TensorData{
					"target_tokens": Ints([]int{5, 6, 7}),
					"w":             {Data: []float64{}, DType: DTypeFloat32, Shape: []int{0, 4}, SparseCrowIndices: []int{0}, SparseColIndices: []int{}},
					"x":             {Data: []float64{2.5, -0.5}, DType: DTypeFloat32, Shape: []int{2, 2}, SparseCrowIndices: []int{0, 1, 2}, SparseColIndices: []int{1, 0}},
				}},
		}}},
	}
	for i, r := range reqs {
		for _, fo := range []bool{false, true} {
			ours, err := r.MarshalProto(fo)
			if err != nil {
				t.Fatal(err)
			}
			var got tinkerpb.ForwardBackwardRequest
			if err := proto.Unmarshal(ours, &got); err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			if want := generatedRequest(t, r, fo); !proto.Equal(&got, want) {
				t.Errorf("request %d (forward_only %v):\n got %v\nwant %v", i, fo, &got, want)
			}
			// And back: the decoder reads what the encoder wrote.
			var back ForwardBackwardRequest
			if only, err := back.UnmarshalProto(ours); err != nil || only != fo {
				t.Errorf("request %d: decoding: %v (forward_only %v)", i, err, only)
			}
		}
	}
}
