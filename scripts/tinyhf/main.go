// Command tinyhf writes a tiny random Hugging Face model directory (a
// Qwen2-shaped decoder with a small byte-level BPE tokenizer and ChatML's
// chat template), so that the paths that need one — `model.init`, the
// served loop against `trainer serve`, `trainer eval -checkpoint` — can be
// tried offline. The model is untrained: it exercises the plumbing, not
// the learning.
//
//	go run ./scripts/tinyhf -out runs/tiny-qwen2
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/agentrl/agentrl/model/hftest"
)

func main() {
	out := flag.String("out", "", "directory to write (created if needed)")
	seed := flag.Uint64("seed", 1, "seed of the random weights")
	layers := flag.Int("layers", 1, "number of decoder blocks")
	dModel := flag.Int("d-model", 32, "width of the model (a multiple of 4)")
	dFF := flag.Int("d-ff", 64, "width of the MLP")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "tinyhf: -out DIR is required")
		os.Exit(2)
	}
	d, err := hftest.Write(*out, hftest.Options{Seed: *seed, Layers: *layers, DModel: *dModel, DFF: *dFF})
	if err != nil {
		fmt.Fprintln(os.Stderr, "tinyhf:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: vocabulary %d, d_model %d, %d layers, context %d\n", d.Path, d.Config.Vocab, d.Config.DModel, d.Config.Layers, d.Config.MaxSeq)
}
