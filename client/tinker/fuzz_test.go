package tinker_test

import (
	"runtime"
	"testing"

	"github.com/agentrl/agentrl/client/tinker"
)

// FuzzProtoResults decodes arbitrary bytes as the protobuf results a
// server sends (ForwardBackwardOutput, SampleResponse) and requests
// (ForwardBackwardRequest): no panic, and memory within a constant factor
// of the input, whatever counts and shapes it declares.
func FuzzProtoResults(f *testing.F) {
	for _, g := range []string{goldenFwdBwd, goldenForward, goldenOutput, goldenSample} {
		b, err := hexBytes(g)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var out tinker.ForwardBackwardOutput
		if out.UnmarshalProto(data, 64) == nil {
			// What the client checks next must not allocate either.
			for _, d := range out.LossFnOutputs {
				for _, td := range d {
					td.Len()
				}
			}
		}
		var s tinker.SampleResponse
		s.UnmarshalProto(data)
		var r tinker.ForwardBackwardRequest
		r.UnmarshalProto(data)
		runtime.ReadMemStats(&after)
		if got, bound := after.TotalAlloc-before.TotalAlloc, uint64(256*len(data)+1<<20); got > bound {
			t.Fatalf("decoding %d bytes allocated %d (bound %d)", len(data), got, bound)
		}
	})
}
