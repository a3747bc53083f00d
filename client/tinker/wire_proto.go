package tinker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/agentrl/agentrl/client/tinker/internal/tinkerpb"
)

//go:generate protoc --go_out=internal/tinkerpb --go_opt=paths=source_relative --proto_path=internal/tinkerpb tinker_public.proto

// The protobuf dialect of the Tinker API (the SDK's tinker_public schema,
// internal/tinkerpb/tinker_public.proto). From SDK 0.25.0 forward and
// forward_backward bodies travel as protobuf only (forward as
// forward_backward with forward_only set), zstd-compressed when the
// server's client/config asks (proto_compress_fwdbwd), and the results of
// forward, forward_backward and asample are read as protobuf only
// (retrieve_future with Accept: application/x-protobuf). The functions
// here convert between those messages and this package's JSON types, so
// that the client and the offline server (server/tinkerapi) work on one
// representation whichever dialect carried it.

// Media types of request and reply bodies.
const (
	ContentTypeJSON  = "application/json"
	ContentTypeProto = "application/x-protobuf"
)

// topkMaskLogprob and topkMaskToken fill the cells of a top-k matrix that
// have no entry (the SDK's MASK_LOGPROB).
const (
	topkMaskLogprob = -99999.0
	topkMaskToken   = 0
)

// deterministic marshals map entries in key order, so that one message
// always has the same bytes.
var deterministic = proto.MarshalOptions{Deterministic: true}

// MarshalProto encodes r as the SDK's ForwardBackwardRequest, with
// forwardOnly for a forward pass. Tensors go in their dtype (float32
// values rounded to float32, as the SDK holds them); token ids must fit
// int32; float32 values must be finite (as JSON requires).
//
// The bytes are the SDK's own for the same request: fields in number
// order, map entries in key order (as Python's protobuf writes them with
// deterministic serialization). Go's generated marshaller writes a oneof
// (a Tensor's dense or sparse_csr) after the other fields instead, which
// every parser reads alike; this encoder, written with protowire, keeps
// the SDK's order, and TestMarshalMatchesGenerated checks it against the
// generated messages of internal/tinkerpb.
func (r ForwardBackwardRequest) MarshalProto(forwardOnly bool) ([]byte, error) {
	var b []byte
	if r.ModelID != "" {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, r.ModelID)
	}
	if r.SeqID != nil && *r.SeqID != 0 {
		if *r.SeqID < math.MinInt32 || *r.SeqID > math.MaxInt32 {
			return nil, fmt.Errorf("seq_id %d does not fit the protobuf's int32", *r.SeqID)
		}
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(int64(int32(*r.SeqID))))
	}
	in := r.ForwardBackwardInput
	for i, d := range in.Data {
		db, err := marshalDatum(d)
		if err != nil {
			return nil, fmt.Errorf("datum %d: %w", i, err)
		}
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, db)
	}
	if in.LossFn != "" {
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = protowire.AppendString(b, in.LossFn)
	}
	for _, k := range slices.Sorted(maps.Keys(in.LossFnConfig)) {
		var e []byte
		e = protowire.AppendTag(e, 1, protowire.BytesType)
		e = protowire.AppendString(e, k)
		e = protowire.AppendTag(e, 2, protowire.Fixed64Type)
		e = protowire.AppendFixed64(e, math.Float64bits(in.LossFnConfig[k]))
		b = protowire.AppendTag(b, 5, protowire.BytesType)
		b = protowire.AppendBytes(b, e)
	}
	if forwardOnly {
		b = protowire.AppendTag(b, 6, protowire.VarintType)
		b = protowire.AppendVarint(b, 1)
	}
	return b, nil
}

// marshalDatum encodes a Datum: its token chunks, then its loss inputs in
// key order.
func marshalDatum(d Datum) ([]byte, error) {
	var b []byte
	for j, c := range d.ModelInput.Chunks {
		if c.Type != "" && c.Type != ChunkEncodedText {
			return nil, fmt.Errorf("chunk %d has type %q; only %q is sent", j, c.Type, ChunkEncodedText)
		}
		toks, err := int32Bytes(c.Tokens)
		if err != nil {
			return nil, fmt.Errorf("chunk %d: %w", j, err)
		}
		var text []byte // EncodedTextChunk
		if len(toks) > 0 {
			text = protowire.AppendTag(text, 1, protowire.BytesType)
			text = protowire.AppendBytes(text, toks)
		}
		var chunk []byte // Chunk, its oneof set to encoded_text
		chunk = protowire.AppendTag(chunk, 1, protowire.BytesType)
		chunk = protowire.AppendBytes(chunk, text)
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, chunk)
	}
	for _, k := range slices.Sorted(maps.Keys(d.LossFnInputs)) {
		tb, err := marshalTensor(d.LossFnInputs[k])
		if err != nil {
			return nil, fmt.Errorf("loss_fn_inputs[%q]: %w", k, err)
		}
		var e []byte
		e = protowire.AppendTag(e, 1, protowire.BytesType)
		e = protowire.AppendString(e, k)
		e = protowire.AppendTag(e, 2, protowire.BytesType)
		e = protowire.AppendBytes(e, tb)
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, e)
	}
	return b, nil
}

// marshalTensor encodes a request tensor in its dtype, dense or CSR.
func marshalTensor(t TensorData) ([]byte, error) {
	var vals []byte
	var dtype tinkerpb.DType
	switch t.DType {
	case DTypeFloat32:
		dtype = tinkerpb.DType_DTYPE_FLOAT32
		for i, x := range t.Data {
			// As JSON, which cannot carry them: a loss input that is not
			// finite is a bug of the caller's, not something to train on.
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("value %v at %d is not finite", x, i)
			}
		}
		vals = float32Bytes(t.Data)
	case DTypeInt64:
		dtype = tinkerpb.DType_DTYPE_INT64
		var err error
		if vals, err = int64Bytes(t.Data); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("dtype %q (want %q or %q)", t.DType, DTypeFloat32, DTypeInt64)
	}
	var b []byte
	switch {
	case t.SparseCrowIndices == nil && t.SparseColIndices == nil:
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, vals)
	case t.SparseCrowIndices == nil || t.SparseColIndices == nil:
		return nil, errors.New("a sparse tensor needs sparse_crow_indices and sparse_col_indices")
	default:
		var csr []byte
		for i, f := range [][]byte{vals, intsAsInt64Bytes(t.SparseCrowIndices), intsAsInt64Bytes(t.SparseColIndices)} {
			if len(f) > 0 {
				csr = protowire.AppendTag(csr, protowire.Number(i+1), protowire.BytesType)
				csr = protowire.AppendBytes(csr, f)
			}
		}
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, csr)
	}
	b = protowire.AppendTag(b, 3, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(dtype))
	if len(t.Shape) > 0 {
		var packed []byte
		for _, s := range t.Shape {
			packed = protowire.AppendVarint(packed, uint64(int64(s)))
		}
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = protowire.AppendBytes(b, packed)
	}
	return b, nil
}

// UnmarshalProto decodes a ForwardBackwardRequest body into r and returns
// its forward_only flag. The memory it takes is within a constant factor
// of len(data): every value it creates comes from bytes of the body (a
// tensor's declared shape is not expanded here; TensorData.Len checks it
// against the data).
func (r *ForwardBackwardRequest) UnmarshalProto(data []byte) (forwardOnly bool, err error) {
	var m tinkerpb.ForwardBackwardRequest
	if err := proto.Unmarshal(data, &m); err != nil {
		return false, fmt.Errorf("invalid protobuf ForwardBackwardRequest: %w", err)
	}
	*r = ForwardBackwardRequest{ModelID: m.ModelId}
	// The SDK encodes a missing seq_id as 0, and numbers from 1.
	if m.SeqId != 0 {
		seq := int(m.SeqId)
		r.SeqID = &seq
	}
	in := &r.ForwardBackwardInput
	in.LossFn = m.LossFn
	if len(m.LossFnConfig) > 0 {
		in.LossFnConfig = maps.Clone(m.LossFnConfig)
	}
	in.Data = make([]Datum, len(m.Data))
	for i, pd := range m.Data {
		d := Datum{ModelInput: ModelInput{Chunks: make([]Chunk, 0, len(pd.ModelInput))}}
		for j, pc := range pd.ModelInput {
			switch c := pc.GetChunk().(type) {
			case *tinkerpb.Chunk_EncodedText:
				toks, err := int32Values(c.EncodedText.GetTokens())
				if err != nil {
					return false, fmt.Errorf("datum %d: chunk %d: tokens: %w", i, j, err)
				}
				d.ModelInput.Chunks = append(d.ModelInput.Chunks, Chunk{Type: ChunkEncodedText, Tokens: toks})
			case *tinkerpb.Chunk_Image:
				d.ModelInput.Chunks = append(d.ModelInput.Chunks, Chunk{Type: "image"})
			case *tinkerpb.Chunk_Dmel:
				d.ModelInput.Chunks = append(d.ModelInput.Chunks, Chunk{Type: "dmel"})
			default:
				return false, fmt.Errorf("datum %d: chunk %d is empty", i, j)
			}
		}
		if len(pd.LossFnInputs) > 0 {
			d.LossFnInputs = make(map[string]TensorData, len(pd.LossFnInputs))
		}
		for k, pt := range pd.LossFnInputs {
			t, err := tensorFromProto(pt)
			if err != nil {
				return false, fmt.Errorf("datum %d: loss_fn_inputs[%q]: %w", i, k, err)
			}
			d.LossFnInputs[k] = t
		}
		in.Data[i] = d
	}
	return m.ForwardOnly, nil
}

// tensorFromProto decodes a request tensor (float32 or int64, as the SDK
// writes them).
func tensorFromProto(pt *tinkerpb.Tensor) (TensorData, error) {
	var t TensorData
	if len(pt.GetShape()) > 0 {
		t.Shape = make([]int, len(pt.Shape))
		for i, s := range pt.Shape {
			if s < 0 || s > math.MaxInt32 {
				return t, fmt.Errorf("shape %v has dimension %d", pt.Shape, s)
			}
			t.Shape[i] = int(s)
		}
	}
	var vals []byte
	switch e := pt.GetEncoding().(type) {
	case *tinkerpb.Tensor_Dense:
		vals = e.Dense
	case *tinkerpb.Tensor_SparseCsr:
		vals = e.SparseCsr.GetValues()
		var err error
		if t.SparseCrowIndices, err = int64Indices(e.SparseCsr.GetCrowIndices()); err != nil {
			return t, fmt.Errorf("crow_indices: %w", err)
		}
		if t.SparseColIndices, err = int64Indices(e.SparseCsr.GetColIndices()); err != nil {
			return t, fmt.Errorf("col_indices: %w", err)
		}
		// Absent and empty are the same on the wire; a CSR tensor has both.
		t.SparseCrowIndices, t.SparseColIndices = nonNilInts(t.SparseCrowIndices), nonNilInts(t.SparseColIndices)
	default:
		vals = nil // no encoding: an empty dense tensor
	}
	var err error
	switch pt.GetDtype() {
	case tinkerpb.DType_DTYPE_FLOAT32:
		t.DType = DTypeFloat32
		t.Data, err = float32Values(vals)
	case tinkerpb.DType_DTYPE_INT64:
		t.DType = DTypeInt64
		t.Data, err = int64Values(vals)
	default:
		return t, fmt.Errorf("dtype %v is not a request tensor's (float32 or int64)", pt.GetDtype())
	}
	return t, err
}

// MarshalProto encodes o as the SDK's ForwardBackwardOutput: one
// ArrayRecord holding every datum, each output field a BatchedTensor of
// the data's values concatenated, with their byte offsets.
func (o ForwardBackwardOutput) MarshalProto() ([]byte, error) {
	m := &tinkerpb.ForwardBackwardOutput{LossFnOutputType: o.LossFnOutputType, Metrics: o.Metrics}
	if m.LossFnOutputType == "" {
		m.LossFnOutputType = "ArrayRecord"
	}
	if len(o.LossFnOutputs) == 0 {
		return deterministic.Marshal(m)
	}
	rec := &tinkerpb.ArrayRecord{NumDatums: int64(len(o.LossFnOutputs)), Fields: map[string]*tinkerpb.BatchedTensor{}}
	names := map[string]bool{}
	for _, d := range o.LossFnOutputs {
		for k := range d {
			names[k] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		bt := &tinkerpb.BatchedTensor{Dtype: tinkerpb.DType_DTYPE_FLOAT32}
		dtype := ""
		var trailing []int
		offsets := make([]int64, 0, len(o.LossFnOutputs)+1)
		offsets = append(offsets, 0)
		for i, d := range o.LossFnOutputs {
			t, ok := d[name]
			if ok {
				vals, err := t.Dense()
				if err != nil {
					return nil, fmt.Errorf("loss_fn_outputs[%d][%q]: %w", i, name, err)
				}
				var tr []int
				if len(t.Shape) > 1 {
					tr = t.Shape[1:]
				}
				if dtype == "" {
					dtype, trailing = t.DType, tr
				} else if t.DType != dtype || !slices.Equal(tr, trailing) {
					return nil, fmt.Errorf("loss_fn_outputs[%d][%q]: dtype %s shape %v, the others %s with trailing shape %v", i, name, t.DType, t.Shape, dtype, trailing)
				}
				switch dtype {
				case DTypeInt64:
					b, err := int64Bytes(vals)
					if err != nil {
						return nil, fmt.Errorf("loss_fn_outputs[%d][%q]: %w", i, name, err)
					}
					bt.Data = append(bt.Data, b...)
				case DTypeFloat32:
					bt.Data = append(bt.Data, float32Bytes(vals)...)
				default:
					return nil, fmt.Errorf("loss_fn_outputs[%d][%q]: dtype %q", i, name, t.DType)
				}
			}
			offsets = append(offsets, int64(len(bt.Data)))
		}
		if dtype == DTypeInt64 {
			bt.Dtype = tinkerpb.DType_DTYPE_INT64
		}
		for _, s := range trailing {
			bt.TrailingShape = append(bt.TrailingShape, int64(s))
		}
		bt.Offsets = int64sBytes(offsets)
		rec.Fields[name] = bt
	}
	m.LossFnOutputs = []*tinkerpb.ArrayRecord{rec}
	return deterministic.Marshal(m)
}

// UnmarshalProto decodes a ForwardBackwardOutput into o, as the SDK's
// response_conv reads it: any number of ArrayRecords, their data in
// order; bfloat16 widened to float32 and int32 to int64. A result that
// claims more than maxData data is refused before anything is allocated
// for them; every value decoded comes from bytes of the body.
func (o *ForwardBackwardOutput) UnmarshalProto(data []byte, maxData int) error {
	var m tinkerpb.ForwardBackwardOutput
	if err := proto.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("invalid protobuf ForwardBackwardOutput: %w", err)
	}
	*o = ForwardBackwardOutput{LossFnOutputType: m.LossFnOutputType, Metrics: maps.Clone(m.Metrics)}
	if o.Metrics == nil {
		o.Metrics = map[string]float64{}
	}
	if i := strings.LastIndexByte(o.LossFnOutputType, ':'); i >= 0 {
		o.LossFnOutputType = o.LossFnOutputType[i+1:]
	}
	if len(m.LossFnOutputs) == 0 {
		if o.LossFnOutputType == "" {
			o.LossFnOutputType = "ArrayRecord"
		}
		o.LossFnOutputs = []map[string]TensorData{}
		return nil
	}
	total := 0
	for ri, rec := range m.LossFnOutputs {
		n := rec.GetNumDatums()
		if n == 0 {
			// Before num_datums existed: the first field's count.
			for _, bt := range rec.GetFields() {
				n = int64(len(bt.GetOffsets())/8 - 1)
				break
			}
		}
		if n < 0 || n > int64(maxData-total) {
			return fmt.Errorf("loss_fn_outputs[%d] holds %d data, more than the %d expected", ri, n, maxData)
		}
		outs := make([]map[string]TensorData, n)
		for i := range outs {
			outs[i] = make(map[string]TensorData, len(rec.GetFields()))
		}
		for name, bt := range rec.GetFields() {
			if err := splitBatched(name, bt, outs); err != nil {
				return fmt.Errorf("loss_fn_outputs[%d][%q]: %w", ri, name, err)
			}
		}
		o.LossFnOutputs = append(o.LossFnOutputs, outs...)
		total += int(n)
	}
	return nil
}

// splitBatched adds a BatchedTensor's per-datum values to outs, as field
// name.
func splitBatched(name string, bt *tinkerpb.BatchedTensor, outs []map[string]TensorData) error {
	offs, err := int64Values(bt.GetOffsets())
	if err != nil {
		return fmt.Errorf("offsets: %w", err)
	}
	if len(offs) != len(outs)+1 {
		return fmt.Errorf("%d offsets for %d data", len(offs), len(outs))
	}
	size, dtype := 4, DTypeFloat32
	switch bt.GetDtype() {
	case tinkerpb.DType_DTYPE_FLOAT32:
	case tinkerpb.DType_DTYPE_BFLOAT16:
		size = 2
	case tinkerpb.DType_DTYPE_INT32:
		dtype = DTypeInt64
	case tinkerpb.DType_DTYPE_INT64:
		size, dtype = 8, DTypeInt64
	default:
		return fmt.Errorf("dtype %v", bt.GetDtype())
	}
	trailing, per := make([]int, len(bt.GetTrailingShape())), 1
	for i, s := range bt.GetTrailingShape() {
		if s <= 0 || s > math.MaxInt32 || per > MaxTensorElements/int(s) {
			return fmt.Errorf("trailing shape %v", bt.TrailingShape)
		}
		trailing[i], per = int(s), per*int(s)
	}
	raw := bt.GetData()
	for i := range outs {
		lo, hi := offs[i], offs[i+1]
		if lo < 0 || hi < lo || hi > float64(len(raw)) || lo != math.Trunc(lo) || hi != math.Trunc(hi) {
			return fmt.Errorf("datum %d: byte offsets [%v, %v) outside the %d bytes of data", i, lo, hi, len(raw))
		}
		chunk := raw[int(lo):int(hi)]
		if len(chunk)%size != 0 {
			return fmt.Errorf("datum %d: %d bytes are not whole values of %d bytes", i, len(chunk), size)
		}
		n := len(chunk) / size
		if n%per != 0 {
			return fmt.Errorf("datum %d: %d values do not fill the trailing shape %v", i, n, trailing)
		}
		vals := make([]float64, n)
		for k := range vals {
			b := chunk[k*size:]
			switch bt.GetDtype() {
			case tinkerpb.DType_DTYPE_FLOAT32:
				vals[k] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
			case tinkerpb.DType_DTYPE_BFLOAT16:
				vals[k] = float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16))
			case tinkerpb.DType_DTYPE_INT32:
				vals[k] = float64(int32(binary.LittleEndian.Uint32(b)))
			default:
				vals[k] = float64(int64(binary.LittleEndian.Uint64(b)))
			}
		}
		shape := append([]int{n / per}, trailing...)
		if per == 0 {
			shape[0] = 0
		}
		outs[i][name] = TensorData{Data: vals, DType: dtype, Shape: shape}
	}
	return nil
}

// MarshalProto encodes r as the SDK's SampleResponse: tokens as int32,
// log-probs as float32, a missing prompt log-prob as NaN, top-k prompt
// log-probs as a dense matrix of the widest row, the empty cells masked.
func (r SampleResponse) MarshalProto() ([]byte, error) {
	m := &tinkerpb.SampleResponse{Sequences: make([]*tinkerpb.SampledSequence, len(r.Sequences))}
	for i, s := range r.Sequences {
		ps := &tinkerpb.SampledSequence{}
		switch s.StopReason {
		case StopReasonStop:
			ps.StopReason = tinkerpb.StopReason_STOP_REASON_STOP
		case StopReasonLength:
			ps.StopReason = tinkerpb.StopReason_STOP_REASON_LENGTH
		default:
			return nil, fmt.Errorf("sequence %d: stop_reason %q", i, s.StopReason)
		}
		var err error
		if ps.Tokens, err = int32Bytes(s.Tokens); err != nil {
			return nil, fmt.Errorf("sequence %d: %w", i, err)
		}
		if s.Logprobs != nil {
			ps.Logprobs = float32Bytes(s.Logprobs)
		}
		m.Sequences[i] = ps
	}
	if r.PromptLogprobs != nil {
		lps := make([]float64, len(r.PromptLogprobs))
		for i, p := range r.PromptLogprobs {
			lps[i] = math.NaN()
			if p != nil {
				lps[i] = *p
			}
		}
		m.PromptLogprobs = float32Bytes(lps)
	}
	if r.TopKPromptLogprobs != nil {
		k := 1 // with every row empty, k 1 keeps prompt_length
		for _, row := range r.TopKPromptLogprobs {
			k = max(k, len(row))
		}
		n := len(r.TopKPromptLogprobs)
		ids, lps := make([]int, n*k), make([]float64, n*k)
		for i, row := range r.TopKPromptLogprobs {
			for j := range k {
				ids[i*k+j], lps[i*k+j] = topkMaskToken, topkMaskLogprob
				if j < len(row) {
					ids[i*k+j], lps[i*k+j] = row[j].Token, row[j].Logprob
				}
			}
		}
		idb, err := int32Bytes(ids)
		if err != nil {
			return nil, fmt.Errorf("topk_prompt_logprobs: %w", err)
		}
		m.TopkPromptLogprobs = &tinkerpb.TopkPromptLogprobs{TokenIds: idb, Logprobs: float32Bytes(lps), K: uint32(k), PromptLength: uint32(n)}
	}
	return deterministic.Marshal(m)
}

// UnmarshalProto decodes a SampleResponse into r, as the SDK's
// response_conv reads it: NaN prompt log-probs become null, masked top-k
// cells are dropped and a row with none left is null. Every value decoded
// comes from bytes of the body.
func (r *SampleResponse) UnmarshalProto(data []byte) error {
	var m tinkerpb.SampleResponse
	if err := proto.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("invalid protobuf SampleResponse: %w", err)
	}
	*r = SampleResponse{Sequences: make([]SampledSequence, len(m.Sequences))}
	for i, ps := range m.Sequences {
		var s SampledSequence
		switch ps.GetStopReason() {
		case tinkerpb.StopReason_STOP_REASON_STOP:
			s.StopReason = StopReasonStop
		case tinkerpb.StopReason_STOP_REASON_LENGTH:
			s.StopReason = StopReasonLength
		default:
			return fmt.Errorf("sequence %d: unknown stop_reason %d", i, ps.GetStopReason())
		}
		var err error
		if s.Tokens, err = int32Values(ps.GetTokens()); err != nil {
			return fmt.Errorf("sequence %d: tokens: %w", i, err)
		}
		if s.Tokens == nil {
			s.Tokens = []int{}
		}
		// The SDK reads an empty logprobs field as absent.
		if len(ps.GetLogprobs()) > 0 {
			if s.Logprobs, err = float32Values(ps.Logprobs); err != nil {
				return fmt.Errorf("sequence %d: logprobs: %w", i, err)
			}
		} else if len(s.Tokens) == 0 {
			s.Logprobs = []float64{}
		}
		r.Sequences[i] = s
	}
	if m.PromptLogprobs != nil {
		vals, err := float32Values(m.PromptLogprobs)
		if err != nil {
			return fmt.Errorf("prompt_logprobs: %w", err)
		}
		r.PromptLogprobs = make([]*float64, len(vals))
		for i := range vals {
			if !math.IsNaN(vals[i]) {
				r.PromptLogprobs[i] = &vals[i]
			}
		}
	}
	if tk := m.TopkPromptLogprobs; tk != nil {
		n, k := int(tk.GetPromptLength()), int(tk.GetK())
		if n > 0 && k > 0 {
			ids, err := int32Values(tk.GetTokenIds())
			if err != nil {
				return fmt.Errorf("topk_prompt_logprobs: token_ids: %w", err)
			}
			lps, err := float32Values(tk.GetLogprobs())
			if err != nil {
				return fmt.Errorf("topk_prompt_logprobs: logprobs: %w", err)
			}
			// Checked against the data before anything is shaped by n × k.
			if len(ids) != len(lps) || len(ids)/k != n || len(ids)%k != 0 {
				return fmt.Errorf("topk_prompt_logprobs: %d token ids and %d log-probs for %d positions × k %d", len(ids), len(lps), n, k)
			}
			r.TopKPromptLogprobs = make([][]TokenLogprob, n)
			for i := range n {
				var row []TokenLogprob
				for j := range k {
					if lp := lps[i*k+j]; lp != topkMaskLogprob {
						row = append(row, TokenLogprob{Token: ids[i*k+j], Logprob: lp})
					}
				}
				r.TopKPromptLogprobs[i] = row
			}
		}
	}
	return nil
}

// Little-endian arrays, as numpy's tobytes writes them.

func int32Bytes(xs []int) ([]byte, error) {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		if x < math.MinInt32 || x > math.MaxInt32 {
			return nil, fmt.Errorf("token id %d does not fit int32", x)
		}
		binary.LittleEndian.PutUint32(b[4*i:], uint32(int32(x)))
	}
	return b, nil
}

func int32Values(b []byte) ([]int, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%d bytes are not whole int32 values", len(b))
	}
	if len(b) == 0 {
		return nil, nil
	}
	out := make([]int, len(b)/4)
	for i := range out {
		out[i] = int(int32(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return out, nil
}

// nanBits is the float32 NaN numpy writes (np.float32(np.nan)).
const nanBits = 0x7fc00000

func float32Bytes(xs []float64) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		bits := math.Float32bits(float32(x))
		if math.IsNaN(x) {
			bits = nanBits
		}
		binary.LittleEndian.PutUint32(b[4*i:], bits)
	}
	return b
}

func float32Values(b []byte) ([]float64, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%d bytes are not whole float32 values", len(b))
	}
	out := make([]float64, len(b)/4)
	for i := range out {
		out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return out, nil
}

// int64Bytes encodes whole numbers held as float64 (an int64 tensor's
// values) as int64.
func int64Bytes(xs []float64) ([]byte, error) {
	b := make([]byte, 8*len(xs))
	for i, x := range xs {
		if x != math.Trunc(x) || x < -(1<<63) || x >= 1<<63 {
			return nil, fmt.Errorf("value %v at %d is not an int64", x, i)
		}
		binary.LittleEndian.PutUint64(b[8*i:], uint64(int64(x)))
	}
	return b, nil
}

func int64sBytes(xs []int64) []byte {
	b := make([]byte, 8*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}

func intsAsInt64Bytes(xs []int) []byte {
	b := make([]byte, 8*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(int64(x)))
	}
	return b
}

// int64Values decodes int64 values into float64, as TensorData holds
// them (exact below 2^53, which every id, index and count here is).
func int64Values(b []byte) ([]float64, error) {
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("%d bytes are not whole int64 values", len(b))
	}
	out := make([]float64, len(b)/8)
	for i := range out {
		out[i] = float64(int64(binary.LittleEndian.Uint64(b[8*i:])))
	}
	return out, nil
}

// int64Indices decodes sparse indices, which must fit an int.
func int64Indices(b []byte) ([]int, error) {
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("%d bytes are not whole int64 values", len(b))
	}
	out := make([]int, len(b)/8)
	for i := range out {
		v := int64(binary.LittleEndian.Uint64(b[8*i:]))
		if v < math.MinInt32 || v > math.MaxInt32 {
			return nil, fmt.Errorf("index %d out of range", v)
		}
		out[i] = int(v)
	}
	return out, nil
}

func nonNilInts(xs []int) []int {
	if xs == nil {
		return []int{}
	}
	return xs
}
