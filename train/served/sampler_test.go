package served

import "testing"

// TestAdapterName: run directory names become safe adapter names.
func TestAdapterName(t *testing.T) {
	for in, want := range map[string]string{"sokoban-vllm": "sokoban-vllm", "my run (2)": "my-run--2", "..": "run", "Qwen2.5_x": "Qwen2.5_x", "世界": "run"} {
		if got := adapterName(in); got != want {
			t.Errorf("adapterName(%q) = %q, want %q", in, got, want)
		}
	}
}
