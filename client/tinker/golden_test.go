package tinker_test

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/agentrl/agentrl/client/tinker"
	"github.com/agentrl/agentrl/client/tinker/internal/tinkerpb"
)

// Golden protobuf encodings made by the Tinker SDK 0.25.0's generated
// schema (tinker/proto/tinker_public_pb2.py, with Debian 12's
// python3-protobuf 3.21.12) by testdata/golden_proto.py, serialized
// deterministically (map entries in key order, as MarshalProto writes
// them): the bytes the SDK sends for forward_backward (and forward), and
// those it reads back for forward/forward_backward and asample results.
const (
	goldenFwdBwd  = "0a076d6f64656c5f3110031a88010a100a0e0a0c01000000020000002c01000012210a0a616476616e746167657312130a0c0000003f000080bf000000001801220103121f0a086c6f6770726f627312130a0c000080be000000c00000c0bf180122010312300a0d7461726765745f746f6b656e73121f0a1802000000000000002c01000000000000040000000000000018022201031a81010a080a060a04070000000a0c0a0a0a08080000000900000012300a0d7461726765745f746f6b656e73121f0a18080000000000000009000000000000000a00000000000000180222010312350a0777656967687473122a12220a040000803f1210000000000000000001000000000000001a080200000000000000180122020103220370706f2a1e0a13636c69705f686967685f7468726573686f6c6411333333333333f33f2a1d0a12636c69705f6c6f775f7468726573686f6c64119a9999999999e93f"
	goldenForward = goldenFwdBwd + "3001" // forward_only: true
	goldenOutput  = "0a0b41727261795265636f7264127a123e0a10656c656d656e74776973655f6c6f7373122a0a0c0000003f0000803f000000001218000000000000000008000000000000000c00000000000000180112360a086c6f6770726f6273122a0a0c000000bf000080bf000000c01218000000000000000008000000000000000c00000000000000180118021a130a086c6f73733a73756d11000000000000f83f"
	goldenSample  = "0a1c120c0500000006000000020000001a0c000000bf0000a0bf000000be0a0e08011204090000001a04000040c0120c0000c07f0000c0bf000080be1a380a180000000000000000030000000400000006000000000000001218804fc3c7804fc3c7000000be000020c0000080be804fc3c718022003"
)

// goldenRequest is the request goldenFwdBwd encodes: two data, one of
// two chunks and a CSR-sparse weights tensor, and a ppo loss_fn_config.
func goldenRequest() tinker.ForwardBackwardRequest {
	seq := 3
	return tinker.ForwardBackwardRequest{ModelID: "model_1", SeqID: &seq, ForwardBackwardInput: tinker.ForwardBackwardInput{
		LossFn:       tinker.LossPPO,
		LossFnConfig: map[string]float64{"clip_low_threshold": 0.8, "clip_high_threshold": 1.2},
		Data: []tinker.Datum{{
			ModelInput: tinker.TokensInput([]int{1, 2, 300}),
			LossFnInputs: map[string]tinker.TensorData{
				tinker.InputTargetTokens: tinker.Ints([]int{2, 300, 4}),
				tinker.InputAdvantages:   tinker.Floats([]float64{0.5, -1, 0}),
				tinker.InputLogprobs:     tinker.Floats([]float64{-0.25, -2, -1.5}),
			},
		}, {
			ModelInput: tinker.ModelInput{Chunks: []tinker.Chunk{{Type: tinker.ChunkEncodedText, Tokens: []int{7}}, {Type: tinker.ChunkEncodedText, Tokens: []int{8, 9}}}},
			LossFnInputs: map[string]tinker.TensorData{
				tinker.InputTargetTokens: tinker.Ints([]int{8, 9, 10}),
				tinker.InputWeights:      {Data: []float64{1}, DType: tinker.DTypeFloat32, Shape: []int{1, 3}, SparseCrowIndices: []int{0, 1}, SparseColIndices: []int{2}},
			},
		}},
	}}
}

func goldenOutputValue() tinker.ForwardBackwardOutput {
	return tinker.ForwardBackwardOutput{LossFnOutputType: "ArrayRecord", Metrics: map[string]float64{"loss:sum": 1.5},
		LossFnOutputs: []map[string]tinker.TensorData{
			{"elementwise_loss": tinker.Floats([]float64{0.5, 1}), "logprobs": tinker.Floats([]float64{-0.5, -1})},
			{"elementwise_loss": tinker.Floats([]float64{0}), "logprobs": tinker.Floats([]float64{-2})},
		}}
}

func goldenSampleValue() tinker.SampleResponse {
	p1, p2 := -1.5, -0.25
	return tinker.SampleResponse{
		Sequences: []tinker.SampledSequence{
			{StopReason: tinker.StopReasonStop, Tokens: []int{5, 6, 2}, Logprobs: []float64{-0.5, -1.25, -0.125}},
			{StopReason: tinker.StopReasonLength, Tokens: []int{9}, Logprobs: []float64{-3}},
		},
		PromptLogprobs:     []*float64{nil, &p1, &p2},
		TopKPromptLogprobs: [][]tinker.TokenLogprob{nil, {{Token: 3, Logprob: -0.125}, {Token: 4, Logprob: -2.5}}, {{Token: 6, Logprob: -0.25}}},
	}
}

func hexBytes(s string) ([]byte, error) { return hex.DecodeString(s) }

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hexBytes(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSchemaMatchesSDK: what MarshalProto writes is byte for byte what the
// SDK's schema writes, and what the SDK's schema wrote decodes to the
// values it was made from.
func TestSchemaMatchesSDK(t *testing.T) {
	for _, c := range []struct {
		name   string
		golden string
		enc    func() ([]byte, error)
	}{
		{"forward_backward", goldenFwdBwd, func() ([]byte, error) { return goldenRequest().MarshalProto(false) }},
		{"forward", goldenForward, func() ([]byte, error) { return goldenRequest().MarshalProto(true) }},
		{"ForwardBackwardOutput", goldenOutput, func() ([]byte, error) { return goldenOutputValue().MarshalProto() }},
		{"SampleResponse", goldenSample, func() ([]byte, error) { return goldenSampleValue().MarshalProto() }},
	} {
		got, err := c.enc()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if hex.EncodeToString(got) != c.golden {
			t.Errorf("%s:\n got %x\nwant %s", c.name, got, c.golden)
		}
	}

	for golden, wantOnly := range map[string]bool{goldenFwdBwd: false, goldenForward: true} {
		var req tinker.ForwardBackwardRequest
		only, err := req.UnmarshalProto(unhex(t, golden))
		if err != nil {
			t.Fatal(err)
		}
		want := goldenRequest()
		// The decoded values are float32's: 0.8 and 1.2 stay float64 (a
		// double map), the tensors' values here are exact in float32.
		if only != wantOnly || !reflect.DeepEqual(req, want) {
			t.Errorf("decoded request (forward_only %v):\n got %+v\nwant %+v", only, req, want)
		}
	}
	var out tinker.ForwardBackwardOutput
	if err := out.UnmarshalProto(unhex(t, goldenOutput), 2); err != nil {
		t.Fatal(err)
	}
	if want := goldenOutputValue(); !reflect.DeepEqual(out, want) {
		t.Errorf("decoded output:\n got %+v\nwant %+v", out, want)
	}
	if err := out.UnmarshalProto(unhex(t, goldenOutput), 1); err == nil {
		t.Error("an output of 2 data was accepted for a batch of 1")
	}
	var smp tinker.SampleResponse
	if err := smp.UnmarshalProto(unhex(t, goldenSample)); err != nil {
		t.Fatal(err)
	}
	if want := goldenSampleValue(); !reflect.DeepEqual(smp, want) {
		t.Errorf("decoded sample:\n got %+v\nwant %+v", smp, want)
	}
}

// TestProtoConversions: the forms the SDK reads that ours does not write
// (bfloat16 and int32 outputs, ArrayRecords split in several, a result
// without num_datums) and the edges of each message.
func TestProtoConversions(t *testing.T) {
	marshal := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	offsets := func(xs ...int64) []byte {
		b := make([]byte, 8*len(xs))
		for i, x := range xs {
			binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
		}
		return b
	}
	// bfloat16 -1.5 is 0xbfc0; the second record has no num_datums.
	raw := marshal(&tinkerpb.ForwardBackwardOutput{LossFnOutputs: []*tinkerpb.ArrayRecord{
		{NumDatums: 1, Fields: map[string]*tinkerpb.BatchedTensor{"x": {Data: []byte{0xc0, 0xbf}, Offsets: offsets(0, 2), Dtype: tinkerpb.DType_DTYPE_BFLOAT16}}},
		{Fields: map[string]*tinkerpb.BatchedTensor{"x": {Data: []byte{7, 0, 0, 0, 8, 0, 0, 0}, Offsets: offsets(0, 8), Dtype: tinkerpb.DType_DTYPE_INT32, TrailingShape: []int64{2}}}},
	}})
	var out tinker.ForwardBackwardOutput
	if err := out.UnmarshalProto(raw, 2); err != nil {
		t.Fatal(err)
	}
	want := []map[string]tinker.TensorData{
		{"x": {Data: []float64{-1.5}, DType: tinker.DTypeFloat32, Shape: []int{1}}},
		{"x": {Data: []float64{7, 8}, DType: tinker.DTypeInt64, Shape: []int{1, 2}}},
	}
	if !reflect.DeepEqual(out.LossFnOutputs, want) || out.LossFnOutputType != "" {
		t.Fatalf("%+v", out)
	}

	// Offsets outside the data or not on values, their count not the
	// data's, a count of data beyond the batch.
	four := []byte{7, 0, 0, 0}
	for name, rec := range map[string]*tinkerpb.ArrayRecord{
		"past the end":     {NumDatums: 1, Fields: map[string]*tinkerpb.BatchedTensor{"x": {Data: four, Offsets: offsets(0, 8), Dtype: tinkerpb.DType_DTYPE_INT32}}},
		"not whole values": {NumDatums: 1, Fields: map[string]*tinkerpb.BatchedTensor{"x": {Data: four, Offsets: offsets(0, 3), Dtype: tinkerpb.DType_DTYPE_INT32}}},
		"backwards":        {NumDatums: 1, Fields: map[string]*tinkerpb.BatchedTensor{"x": {Data: four, Offsets: offsets(4, 0), Dtype: tinkerpb.DType_DTYPE_INT32}}},
		"one offset":       {NumDatums: 1, Fields: map[string]*tinkerpb.BatchedTensor{"x": {Data: four, Offsets: offsets(0), Dtype: tinkerpb.DType_DTYPE_INT32}}},
		"huge num_datums":  {NumDatums: math.MaxInt64},
		"unknown dtype":    {NumDatums: 1, Fields: map[string]*tinkerpb.BatchedTensor{"x": {Data: four, Offsets: offsets(0, 4), Dtype: 9}}},
		"trailing shape":   {NumDatums: 1, Fields: map[string]*tinkerpb.BatchedTensor{"x": {Data: four, Offsets: offsets(0, 4), Dtype: tinkerpb.DType_DTYPE_INT32, TrailingShape: []int64{3}}}},
	} {
		if err := out.UnmarshalProto(marshal(&tinkerpb.ForwardBackwardOutput{LossFnOutputs: []*tinkerpb.ArrayRecord{rec}}), 4); err == nil {
			t.Errorf("output %s: accepted", name)
		}
	}

	// Sample: a top-k matrix whose shape does not match its data, an
	// unknown stop reason, tokens not whole int32s.
	for name, m := range map[string]*tinkerpb.SampleResponse{
		"top-k shape": {TopkPromptLogprobs: &tinkerpb.TopkPromptLogprobs{TokenIds: four, Logprobs: four, K: 255, PromptLength: 255}},
		"stop reason": {Sequences: []*tinkerpb.SampledSequence{{StopReason: 5}}},
		"tokens":      {Sequences: []*tinkerpb.SampledSequence{{Tokens: []byte{1, 2, 3}}}},
	} {
		var s tinker.SampleResponse
		if err := s.UnmarshalProto(marshal(m)); err == nil {
			t.Errorf("sample %s: accepted", name)
		}
	}

	// Not finite, too big: refused before sending.
	r := goldenRequest()
	r.ForwardBackwardInput.Data[0].LossFnInputs[tinker.InputAdvantages] = tinker.Floats([]float64{math.Inf(1), 0, 0})
	if _, err := r.MarshalProto(false); err == nil {
		t.Error("an infinite advantage was encoded")
	}
	r = goldenRequest()
	r.ForwardBackwardInput.Data[0].ModelInput = tinker.TokensInput([]int{1 << 40})
	if _, err := r.MarshalProto(false); err == nil {
		t.Error("a token id beyond int32 was encoded")
	}

	// Empty results: no sequences, no outputs.
	var s tinker.SampleResponse
	if err := s.UnmarshalProto(nil); err != nil || len(s.Sequences) != 0 || s.PromptLogprobs != nil {
		t.Errorf("empty sample: %v %+v", err, s)
	}
	if err := out.UnmarshalProto(nil, 0); err != nil || len(out.LossFnOutputs) != 0 {
		t.Errorf("empty output: %v %+v", err, out)
	}
}
