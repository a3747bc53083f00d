// Package native is agentrl's embedded policy: a small Llama/Qwen2-style
// decoder-only transformer (RMSNorm, RoPE, grouped-query attention with
// optional QKV bias, SwiGLU MLP, optionally tied embeddings, optional value
// head) that samples, scores and trains on the CPU in plain Go, with
// hand-written forward and backward kernels over package internal/simd
// (AVX2/AVX-512 assembly GEMM and row kernels, a portable Go path elsewhere).
// Config's variants compute the decoders of Qwen3 (query/key norms, a
// head_dim of its own), Llama 3.1/3.2 (llama3 RoPE scaling) and Gemma 3
// (norms scaling by 1+w, four a block, GeGLU, scaled embeddings, a score
// scale of its own, sliding-window layers with their own RoPE base
// between global ones); their zero values are the decoder above, which
// computes the same bits whatever code the variants added.
//
// # Pieces
//
//   - Kernels (kernels.go, attention.go): the numeric operations behind one
//     interface; CPU is the implementation. Build with -tags netlib to route
//     large GEMMs to OpenBLAS for comparison (kernels_netlib.go).
//   - Model (model.go, forward.go, backward.go): Forward over a packed batch
//     returns per-position log-prob, entropy and value; Backward takes
//     dL/d(those) and accumulates parameter gradients. The model knows
//     nothing about losses: the learner computes them, and their per-token
//     gradients, with package algos.
//   - AdamW, ClipGradNorm and Schedule (adamw.go).
//   - LoRA adapters (lora.go, lora_backward.go): EnableLoRA adds PEFT-style
//     adapters y = W·x + (Alpha/Rank)·B·(A·x) on any of q, k, v, o, gate,
//     up and down (each its own A and B, also inside the fused wqkv and
//     wgu) and freezes the base: Backward then computes the adapters'
//     gradients only, and AdamW and ClipGradNorm act on them; Sample and
//     Score compute with the merged weights; MergeLoRA folds them in.
//     SavePEFT and LoadPEFT (peft.go) write and read them as a PEFT LoRA
//     adapter directory (adapter_config.json, adapter_model.safetensors).
//   - Sample (sample.go) with a KV cache, and Score (score.go), which shares
//     one prompt's cache across many continuations; TopLogprobs (score.go)
//     runs the same passes for the k most likely tokens at each position,
//     and ScoreRanks for each scored token's rank (vLLM's prompt_logprobs
//     rank) beside its log-probability.
//     A prefix cache (prefixcache.go) keeps recent sequences' caches so the
//     next turn of a multi-turn episode only computes its new tokens.
//   - SaveCheckpoint/LoadCheckpoint (checkpoint.go; WriteCheckpoint for a
//     checkpoint that is part of a larger one) over safetensors
//     (safetensors.go), and LoadHF/SaveHF (hf.go) for Hugging Face
//     Qwen2, Qwen3, Llama, Mistral and Gemma 3 checkpoints (hf.go's
//     header says how to add an architecture).
//
// # Conventions
//
// Token alignment. Every per-position quantity is indexed by the token it is
// about: LogProb[b][t] = log p(Tokens[b][t] | Tokens[b][:t]); Entropy[b][t] is
// the entropy of that next-token distribution; Value[b][t] is the value of
// the state Tokens[b][:t]. Position 0 has no context and is always zero
// (unless the sequence follows a shared prefix, see below). A trajectory's
// loss mask, behaviour log-probs and advantages therefore line up index for
// index with its token ids.
//
// Log-probs are those of the raw policy. Sample reports, for each sampled
// token, log softmax of the raw logits at temperature 1, before top-k/top-p
// truncation: the probability the learner recomputes in Forward and Score.
// That is what PPO's importance ratio needs (π_θ/π_old with the same π). When
// sampling with T ≠ 1 or truncation, the behaviour distribution differs from
// the reported π_old; callers who need exact off-policy correction for that
// must account for it themselves (the usual practice, as in vLLM-based
// trainers, is to sample at T = 1 without truncation for RL).
//
// Packing, not padding. A batch's sequences are concatenated into one
// activation matrix; attention never crosses sequence boundaries and RoPE
// positions restart at 0 per sequence. There are no pad tokens. Outputs are
// computed only at the positions selected by Batch.Mask or Batch.PromptLen.
//
// Shared prompts. A prompt common to several sequences (a GRPO group) is
// computed once: in training through Batch.Prefixes/Batch.Prefix (forward and
// backward of the prompt run once, its gradient summed over the group; 2.6×
// faster for 8 replies of 64 tokens to a 192-token prompt), in Sample
// automatically for identical prompts, and in Score for the continuations of
// one ScoreRequest. Across calls, the prefix cache serves any prompt that
// starts with a sequence sampled earlier under the same weights (2× faster
// rollouts for 4-turn conversations; see BenchmarkSampleMultiTurn); any
// weight update clears it. Sharing changes only the work: Sample and Score give
// bit-identical results, training agrees with the unshared batch to float
// rounding.
//
// Weight layout. Linear weights are stored [out, in] (y = x·Wᵀ), as in Hugging
// Face checkpoints; Q, K and V are fused into one [(H+2·KVH)·hd, D] matrix
// (rows: Q heads, K heads, V heads) and gate/up into one [2·F, D] matrix.
// RoPE uses the rotate-half pairing (i, i+hd/2). LoadHF imports a Hugging
// Face checkpoint (F32, BF16 or F16, sharded or not) by concatenating
// those tensors. Besides round-trip tests, TestTorchOracle compares the
// logits of LoadHF's model, on the inference and training paths, with
// scripts/hf_logits_torch.py, an independent PyTorch implementation of
// Hugging Face's Qwen2, Qwen3, Llama (3.1's RoPE scaling included) and
// Gemma 3 forward passes, on tiny random directories of each (model/hftest)
// in F32, BF16 and F16 (largest difference 1.8e-6 of the logits' range,
// about as far as torch's float32 is from float64);
// testdata/hf_reference.py is an older pure-Python check. The comparison
// with transformers itself is still to be made.
//
// Determinism. Initialisation is seeded (PCG, no global RNG). Each sample
// request owns its generator and draws one number per token, and every
// inference operation computes a row from that row's inputs alone in a fixed
// order, so a request's tokens and log-probs do not depend on batch
// composition, and Score reproduces Sample's log-probs bit for bit.
// Training is bit-reproducible for a seed, whatever GOMAXPROCS is. The
// kernels compute every element by the same sequence of float32 operations
// on AVX2 and AVX-512 (see internal/simd), so runs agree bit for bit across
// x86-64 machines with AVX2 and FMA; the portable path (other CPUs) agrees
// to float rounding. With -tags netlib (OpenBLAS) results agree only to
// float rounding across batch shapes, because OpenBLAS picks kernels by
// matrix size.
//
// Performance. GEMMs and row kernels run on internal/simd, parallel on
// long-lived goroutines that stay awake across the kernels of a step
// (simd.Parallel). The benchmarks in bench_test.go report their share of
// this machine's measured FP32 peak (simd.PeakGFLOPS) in the same run;
// scripts/bench-kernels.sh compares them with the gonum-backed kernels this
// package had before, with OpenBLAS and with PyTorch. For OpenBLAS:
//
//	apt-get install -y libopenblas-dev
//	CGO_LDFLAGS=-lopenblas OPENBLAS_NUM_THREADS=1 go test -tags netlib ./model/native
//
// Errors, not panics: bad token ids, sequences longer than MaxSeq, ragged
// inputs of the wrong shape and corrupt checkpoints return errors. Long calls
// (Forward, Backward, Sample, Score) take a context and stop when it is
// cancelled.
//
// Concurrency: Forward, Backward and optimizer updates share the model's
// training workspace and must not overlap. Sample and Score only read the
// weights and may run concurrently with each other (not with updates).
package native
