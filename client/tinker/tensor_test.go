package tinker_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/client/tinker"
)

// TestTensorShapesAreBounded checks that a declared shape is checked
// against the data before anything is allocated: a sparse tensor of one
// value in a [1, 10^12] shape, or a dense shape whose product overflows to
// the length of its data, must be refused, not expanded.
func TestTensorShapesAreBounded(t *testing.T) {
	bad := map[string]string{
		"sparse, huge columns":      `{"data":[1],"dtype":"float32","shape":[1,1000000000000],"sparse_crow_indices":[0,1],"sparse_col_indices":[0]}`,
		"sparse, huge rows×columns": `{"data":[],"dtype":"float32","shape":[3,4611686018427387904],"sparse_crow_indices":[0,0,0,0],"sparse_col_indices":[]}`,
		"dense, product overflows":  `{"data":[],"dtype":"int64","shape":[4294967296,4294967296]}`,
		"dense, product wraps to 1": `{"data":[7],"dtype":"int64","shape":[3,6148914691236517206]}`,
		"dense, over the cap":       `{"data":[],"dtype":"float32","shape":[4097,4097]}`,
		"sparse, column outside":    `{"data":[1],"dtype":"float32","shape":[1,2],"sparse_crow_indices":[0,1],"sparse_col_indices":[2]}`,
		"sparse, rows decrease":     `{"data":[1,2],"dtype":"float32","shape":[2,2],"sparse_crow_indices":[0,2,1],"sparse_col_indices":[0,1]}`,
		"negative dimension":        `{"data":[],"dtype":"float32","shape":[-1,0]}`,
	}
	for name, raw := range bad {
		t.Run(name, func(t *testing.T) {
			var td tinker.TensorData
			if err := json.Unmarshal([]byte(raw), &td); err != nil {
				t.Fatal(err)
			}
			if n, err := td.Len(); err == nil {
				t.Fatalf("Len = %d, want an error", n)
			}
			if d, err := td.Dense(); err == nil {
				t.Fatalf("Dense gave %d values, want an error", len(d))
			}
		})
	}
	// A zero-size dimension makes the shape hold nothing, whatever the
	// other: not an overflow.
	empty := tinker.TensorData{Data: []float64{}, DType: tinker.DTypeFloat32, Shape: []int{0, 1 << 62}}
	if n, err := empty.Len(); err != nil || n != 0 {
		t.Fatalf("Len of %v = %d, %v", empty.Shape, n, err)
	}
	sparse := tinker.TensorData{Data: []float64{-0.5, -0.25}, DType: tinker.DTypeFloat32, Shape: []int{2, 3},
		SparseCrowIndices: []int{0, 1, 2}, SparseColIndices: []int{2, 0}}
	if n, err := sparse.Len(); err != nil || n != 6 {
		t.Fatalf("Len = %d, %v", n, err)
	}
	if d, err := sparse.Dense(); err != nil || !reflect.DeepEqual(d, []float64{0, 0, -0.5, -0.25, 0, 0}) {
		t.Fatalf("Dense = %v, %v", d, err)
	}
}

// TestHostileForwardReply checks the training client against a server
// whose forward result declares a sparse tensor that would expand to 8 TB:
// the result is malformed, refused before a caller's Dense sees it.
func TestHostileForwardReply(t *testing.T) {
	for name, out := range map[string]string{
		"huge sparse shape": `{"data":[-0.5],"dtype":"float32","shape":[1,1000000000000],"sparse_crow_indices":[0,1],"sparse_col_indices":[0]}`,
		// Each tensor within MaxTensorElements, together far beyond what
		// a batch of three tokens can have.
		"many large tensors": `{"data":[],"dtype":"float32","shape":[0,1]},"a":{"data":[0],"dtype":"float32","shape":[1,16777216],"sparse_crow_indices":[0,1],"sparse_col_indices":[0]},` +
			`"b":{"data":[0],"dtype":"float32","shape":[1,16777216],"sparse_crow_indices":[0,1],"sparse_col_indices":[0]}`,
	} {
		t.Run(name, func(t *testing.T) {
			f, _, m := setup(t, nil)
			f.fault = resultFor(`{"loss_fn_output_type":"scalar","loss_fn_outputs":[{"logprobs":` + out + `}],"metrics":{}}`)
			_, err := m.Forward(context.Background(), batch(1, 2, 3, 4))
			if !errors.Is(err, tinker.ErrMalformed) || !strings.Contains(err.Error(), "loss_fn_outputs") {
				t.Fatalf("err = %v, want ErrMalformed about loss_fn_outputs", err)
			}
		})
	}
}

// FuzzTensorData decodes arbitrary JSON as a TensorData: Len and Dense
// must never panic, must agree, and Dense must never hold more than
// MaxTensorElements values.
func FuzzTensorData(f *testing.F) {
	for _, seed := range []string{
		`{"data":[1,2,3],"dtype":"float32"}`,
		`{"data":[1,2,3,4,5,6],"dtype":"int64","shape":[2,3]}`,
		`{"data":[-0.5,-0.25],"dtype":"float32","shape":[2,3],"sparse_crow_indices":[0,1,2],"sparse_col_indices":[2,0]}`,
		`{"data":[1],"dtype":"float32","shape":[1,1000000000000],"sparse_crow_indices":[0,1],"sparse_col_indices":[0]}`,
		`{"data":[],"dtype":"int64","shape":[4294967296,4294967296]}`,
		`{"data":[1],"dtype":"float32","shape":[1,1],"sparse_crow_indices":[0,1]}`,
		`{"data":[],"dtype":"float32","shape":[0,-3]}`,
		`{"data":[1e308,-1e308],"dtype":"int64","shape":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var td tinker.TensorData
		if json.Unmarshal(raw, &td) != nil {
			return
		}
		n, lerr := td.Len()
		d, derr := td.Dense()
		if (lerr == nil) != (derr == nil) {
			t.Fatalf("Len: %v, Dense: %v", lerr, derr)
		}
		if lerr != nil {
			return
		}
		if len(d) != n || n > tinker.MaxTensorElements {
			t.Fatalf("Len %d, Dense %d values (cap %d)", n, len(d), tinker.MaxTensorElements)
		}
		td.IntValues() // must not panic on any value
	})
}

// TestUnload checks TrainingModel.Unload: unload_model with the model's
// id, after which the server knows the model no more.
func TestUnload(t *testing.T) {
	f, _, m := setup(t, nil)
	if err := m.Unload(context.Background()); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests("unload_model")
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), `"model_id":"`+m.ID()+`"`) {
		t.Fatalf("unload_model requests: %v", reqs)
	}
	if _, err := m.Info(context.Background()); err == nil {
		t.Fatal("get_info of an unloaded model succeeded")
	}
}
