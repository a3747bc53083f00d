#!/usr/bin/env python3
"""An independent reference for the logits of a Hugging Face decoder directory.

It implements, in plain PyTorch and without transformers, the forward pass
of the architectures agentrl loads (model/native.LoadHF) as Hugging Face's
modeling_qwen2.py, modeling_qwen3.py, modeling_llama.py and
modeling_gemma3.py define them:

  * Qwen2ForCausalLM (model_type "qwen2"): q/k/v projections with biases,
    o_proj without;
  * Qwen3ForCausalLM ("qwen3"): no biases; an RMSNorm over each query and
    key head (q_norm, k_norm: head_dim weights) before RoPE; head_dim from
    config.json (128 when absent), so that heads * head_dim may differ
    from hidden_size;
  * LlamaForCausalLM ("llama", Llama 3.0 to 3.2): no biases unless
    attention_bias (then q/k/v/o all have one) or mlp_bias; Llama 3.1's
    rope_scaling (rope_type "llama3": transformers'
    _compute_llama3_parameters, wavelengths longer than
    original_max_position_embeddings / low_freq_factor slowed by factor,
    shorter than original_max_position_embeddings / high_freq_factor kept,
    those between interpolated) and "linear" (every frequency divided by
    factor);
  * Gemma3ForCausalLM ("gemma3_text") and the text decoder of
    Gemma3ForConditionalGeneration ("gemma3": text_config, with
    Gemma3TextConfig's defaults for the keys it leaves out; the weights
    under language_model.model.* or model.language_model.*, the vision
    tower's ignored): embeddings multiplied by sqrt(hidden_size), RMSNorms
    that scale by (1 + weight), four a block (input, post-attention,
    pre- and post-feedforward: the attention's and the MLP's outputs are
    normed before they join the residual), q/k norms, scores scaled by
    query_pre_attn_scalar**-0.5, sliding-window attention (a query sees
    its own and the sliding_window - 1 positions before it) on the layers
    layer_types names (or all but every sliding_window_pattern-th), whose
    RoPE has base rope_local_base_freq and no scaling, the global layers'
    rope_theta and rope_scaling, and a GeGLU MLP down(gelu_tanh(gate(x)) *
    up(x)).

All of them have token embeddings, pre-norm blocks (RMSNorm computed in
float32, eps = rms_norm_eps), rotary position embeddings in the
rotate-half layout (the two halves of each head, not interleaved pairs),
grouped-query causal attention (1/sqrt(head_dim) unless said), a gated
MLP (SwiGLU down(silu(gate(x)) * up(x)) unless said), a final RMSNorm and
the LM head (the embedding matrix when tie_word_embeddings). The RoPE
settings are rope_parameters' (transformers 5's config.json; for Gemma 3
one entry per layer type, full_attention and sliding_attention) or
rope_theta and rope_scaling (transformers 4's); keys absent from
config.json take the configuration classes' defaults (rms_norm_eps 1e-6,
rope_theta 10000, untied head; Gemma 3's). Other rope types (dynamic,
yarn, longrope, ...), logit softcapping (Gemma 2), other activations and
sliding windows elsewhere are refused rather than approximated.

Gemma's embedding scale: transformers multiplies the embeddings by
embed_scale.to(weight.dtype), sqrt(hidden_size) rounded to the dtype the
model runs in, which is the checkpoint's torch_dtype when it is run as
saved (transformers 5's dtype="auto", vLLM). This script computes in
float32 or float64 but keeps that rounding, to the checkpoint's
torch_dtype: it is the bf16 model's arithmetic, done more precisely.

It reads config.json and the safetensors weights itself (model.safetensors,
or the shards named by model.safetensors.index.json; F32, F16 and BF16,
also F64), so no safetensors or transformers package is needed: only torch
and numpy (Debian: apt-get install python3-torch).

Usage:

  hf_logits_torch.py DIR '[[1, 2, 3], [4, 5]]'   token ids as an argument
  hf_logits_torch.py DIR < ids.json              or as JSON on stdin
  hf_logits_torch.py --float64 DIR ...           compute in float64
  hf_logits_torch.py --batch < requests.json     several directories at once

With DIR it prints {"dtype": ..., "logits": L} where L[b][t] is the vector
of vocab_size logits after sequence b's tokens 0..t (each sequence is run
alone, positions from 0). --batch reads {"requests": [{"dir": DIR, "ids":
[[...], ...], "dtype": "float32" | "float64"}, ...]} and prints {"results":
[{"dtype": ..., "logits": L}, ...]}, one per request, in order. Float32
logits are printed exactly (each JSON number is a float32 value).
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch

SUPPORTED = {
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "llama": "LlamaForCausalLM",
    "gemma3_text": "Gemma3ForCausalLM",
    "gemma3": "Gemma3ForConditionalGeneration",
}

# Gemma3TextConfig's defaults (transformers 4.50 to 5), which a gemma3
# model's text_config relies on for the keys it leaves out.
GEMMA3_TEXT_DEFAULTS = {
    "vocab_size": 262208,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 26,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh",
    "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
    "rope_theta": 1_000_000.0,
    "attention_bias": False,
    "query_pre_attn_scalar": 256,
    "sliding_window": 4096,
    "final_logit_softcapping": None,
    "attn_logit_softcapping": None,
    "rope_scaling": None,
    "rope_local_base_freq": 10_000.0,
    "sliding_window_pattern": 6,
}


# ---------------------------------------------------------------------------
# Weights: safetensors read by hand.


def read_safetensors(path):
    """Returns {name: float32 numpy array} for one safetensors file."""
    with open(path, "rb") as f:
        blob = f.read()
    (hlen,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + hlen].decode("utf-8"))
    body = memoryview(blob)[8 + hlen :]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        start, end = e["data_offsets"]
        raw = body[start:end]
        dtype = e["dtype"]
        if dtype == "F32":
            a = np.frombuffer(raw, dtype="<f4").astype(np.float32)
        elif dtype == "F64":
            a = np.frombuffer(raw, dtype="<f8").astype(np.float32)
        elif dtype == "F16":
            a = np.frombuffer(raw, dtype="<f2").astype(np.float32)
        elif dtype == "BF16":
            # bfloat16 is the upper half of a float32's bits.
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            a = bits.view(np.float32)
        else:
            raise SystemExit(f"{path}: tensor {name}: dtype {dtype} is not supported")
        shape = e["shape"]
        if a.size != math.prod(shape):
            raise SystemExit(f"{path}: tensor {name}: {a.size} values for shape {shape}")
        out[name] = a.reshape(shape)
    return out


def read_weights(model_dir):
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    weights = {}
    for name in files:
        for k, v in read_safetensors(os.path.join(model_dir, name)).items():
            if k in weights:
                raise SystemExit(f"{model_dir}: tensor {k} is in two files")
            weights[k] = v
    return weights


# ---------------------------------------------------------------------------
# The model.


def parse_rope(what, rope):
    """Returns (scaling, theta or None) of one RoPE description: scaling is
    None, ("linear", factor) or ("llama3", factor, low, high, original)."""
    if rope is None:
        return None, None
    rope = dict(rope)
    rt = rope.pop("rope_type", None)
    rt2 = rope.pop("type", None)
    if rt is not None and rt2 is not None and rt != rt2:
        raise SystemExit(f"{what}: rope_type {rt!r} and type {rt2!r} differ")
    rt = rt or rt2 or "default"
    theta = rope.pop("rope_theta", None)
    if rt == "default":
        scaling = None
    elif rt == "linear":
        scaling = ("linear", float(rope.pop("factor")))
    elif rt == "llama3":
        scaling = (
            "llama3",
            float(rope.pop("factor")),
            float(rope.pop("low_freq_factor")),
            float(rope.pop("high_freq_factor")),
            float(rope.pop("original_max_position_embeddings")),
        )
    else:
        raise SystemExit(f"{what}: rope type {rt!r} is not supported")
    if rope:
        raise SystemExit(f"{what}: keys {sorted(rope)} are not supported")
    return scaling, theta


class Decoder:
    def __init__(self, model_dir, dtype):
        with open(os.path.join(model_dir, "config.json")) as f:
            cfg = json.load(f)
        mt = cfg.get("model_type")
        if mt not in SUPPORTED:
            raise SystemExit(f"model_type {mt!r} is not supported ({', '.join(SUPPORTED)})")
        self.wrapped = mt == "gemma3"
        checkpoint_dtype = cfg.get("torch_dtype") or cfg.get("dtype") or "float32"
        if self.wrapped:
            text = cfg["text_config"]
            cfg = dict(GEMMA3_TEXT_DEFAULTS, **text)
            mt = "gemma3_text"
            checkpoint_dtype = text.get("torch_dtype") or text.get("dtype") or checkpoint_dtype
        elif mt == "gemma3_text":
            cfg = dict(GEMMA3_TEXT_DEFAULTS, **cfg)
        self.gemma = mt == "gemma3_text"
        self.dtype = dtype
        self.hidden = cfg["hidden_size"]
        self.layers = cfg["num_hidden_layers"]
        self.heads = cfg["num_attention_heads"]
        self.kv_heads = cfg.get("num_key_value_heads") or self.heads
        if mt == "qwen3":
            self.head_dim = cfg.get("head_dim") or 128  # Qwen3Config's default
        else:
            self.head_dim = cfg.get("head_dim") or self.hidden // self.heads
        # The configuration classes' defaults where a key is absent.
        self.eps = cfg.get("rms_norm_eps", 1e-6)
        self.tied = cfg.get("tie_word_embeddings", False)

        # RoPE: the global layers' base and scaling; Gemma's sliding layers'.
        rope = cfg.get("rope_parameters")
        legacy_scaling, _ = parse_rope("rope_scaling", cfg.get("rope_scaling"))
        if rope:
            if self.gemma and "full_attention" in rope:
                self.scaling, theta = parse_rope("rope_parameters full_attention", rope["full_attention"])
                self.theta = theta if theta is not None else cfg.get("rope_theta", 10000.0)
                local_scaling, local_theta = parse_rope("rope_parameters sliding_attention", rope.get("sliding_attention"))
                if local_scaling is not None:
                    raise SystemExit("a scaled RoPE on the sliding layers is not supported")
                self.local_theta = local_theta if local_theta is not None else cfg.get("rope_local_base_freq")
            else:
                self.scaling, theta = parse_rope("rope_parameters", rope)
                self.theta = theta if theta is not None else cfg.get("rope_theta", 10000.0)
                self.local_theta = cfg.get("rope_local_base_freq")
        else:
            self.scaling = legacy_scaling
            self.theta = cfg.get("rope_theta", 10000.0)
            self.local_theta = cfg.get("rope_local_base_freq")

        # Which layers attend through a sliding window.
        self.window = None
        self.sliding = [False] * self.layers
        if self.gemma:
            for key in ("final_logit_softcapping", "attn_logit_softcapping"):
                if cfg.get(key) is not None:
                    raise SystemExit(f"{key} is not supported")
            if cfg.get("hidden_activation", "gelu_pytorch_tanh") != "gelu_pytorch_tanh":
                raise SystemExit(f"hidden_activation {cfg['hidden_activation']!r} is not supported")
            types = cfg.get("layer_types")
            if types is None:
                pattern = cfg.get("sliding_window_pattern", 6)
                types = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(self.layers)]
            for i, t in enumerate(types):
                if t not in ("sliding_attention", "full_attention"):
                    raise SystemExit(f"layer type {t!r} is not supported")
                self.sliding[i] = t == "sliding_attention"
            self.window = cfg.get("sliding_window")
            self.scaling_q = cfg["query_pre_attn_scalar"] ** -0.5
        else:
            if cfg.get("hidden_act", "silu") != "silu":
                raise SystemExit(f"hidden_act {cfg['hidden_act']!r} is not supported")
            if cfg.get("use_sliding_window", False) or cfg.get("layer_types"):
                raise SystemExit("sliding windows are not supported outside Gemma 3")
            self.scaling_q = 1.0 / math.sqrt(self.head_dim)

        if mt == "qwen2":
            self.qkv_bias, self.o_bias, self.mlp_bias = True, False, False
        else:
            bias = cfg.get("attention_bias", False)
            self.qkv_bias, self.o_bias, self.mlp_bias = bias, bias, cfg.get("mlp_bias", False)
        self.qk_norm = mt in ("qwen3", "gemma3_text")

        w = read_weights(model_dir)
        if self.wrapped:
            # The hub's files name the decoder language_model.model.*,
            # transformers 4.52 and later model.language_model.*.
            renamed = {}
            for k, v in w.items():
                if k.startswith(("vision_tower.", "multi_modal_projector.", "model.vision_tower.", "model.multi_modal_projector.")):
                    continue
                if k.startswith("language_model.model."):
                    k = "model." + k[len("language_model.model.") :]
                elif k.startswith("model.language_model."):
                    k = "model." + k[len("model.language_model.") :]
                elif k.startswith("language_model."):
                    k = k[len("language_model.") :]
                renamed[k] = v
            w = renamed
        used = set()

        def take(name):
            if name not in w:
                raise SystemExit(f"missing tensor {name}")
            used.add(name)
            return torch.from_numpy(np.ascontiguousarray(w[name])).to(dtype)

        def linear(prefix, bias):
            return (take(prefix + ".weight"), take(prefix + ".bias") if bias else None)

        self.embed = take("model.embed_tokens.weight")
        self.embed_scale = None
        if self.gemma:
            # transformers: embed_scale.to(weight.dtype), the dtype the
            # model runs in: the checkpoint's (see the module's doc).
            run_dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(checkpoint_dtype, torch.float32)
            self.embed_scale = torch.tensor(self.hidden**0.5).to(run_dtype).to(dtype)
        self.blocks = []
        for i in range(self.layers):
            p = f"model.layers.{i}."
            blk = {
                "in_norm": take(p + "input_layernorm.weight"),
                "q": linear(p + "self_attn.q_proj", self.qkv_bias),
                "k": linear(p + "self_attn.k_proj", self.qkv_bias),
                "v": linear(p + "self_attn.v_proj", self.qkv_bias),
                "o": linear(p + "self_attn.o_proj", self.o_bias),
                "post_norm": take(p + "post_attention_layernorm.weight"),
                "gate": linear(p + "mlp.gate_proj", self.mlp_bias),
                "up": linear(p + "mlp.up_proj", self.mlp_bias),
                "down": linear(p + "mlp.down_proj", self.mlp_bias),
            }
            if self.qk_norm:
                blk["q_norm"] = take(p + "self_attn.q_norm.weight")
                blk["k_norm"] = take(p + "self_attn.k_norm.weight")
            if self.gemma:
                blk["pre_ff_norm"] = take(p + "pre_feedforward_layernorm.weight")
                blk["post_ff_norm"] = take(p + "post_feedforward_layernorm.weight")
            self.blocks.append(blk)
        self.norm = take("model.norm.weight")
        if self.tied:
            self.head = self.embed
            used.add("lm_head.weight")  # a stored copy is ignored, as tying does
        else:
            self.head = take("lm_head.weight")
        extra = [k for k in w if k not in used and not k.endswith("rotary_emb.inv_freq")]
        if extra:
            raise SystemExit(f"unexpected tensors: {sorted(extra)[:5]}")

    def rms_norm(self, x, weight):
        xf = x.to(torch.promote_types(x.dtype, torch.float32))
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        if self.gemma:
            # Gemma3RMSNorm: scale by (1 + weight), in float32, then cast.
            return (xf * (1.0 + weight.to(xf.dtype))).to(x.dtype)
        # As HF's Llama/Qwen: normalise in (at least) float32, cast back,
        # then scale.
        return weight * xf.to(x.dtype)

    @staticmethod
    def apply(lin, x):
        weight, bias = lin
        y = x @ weight.T
        return y if bias is None else y + bias

    def inv_freq(self, theta, scaling, fdt):
        # inv_freq[i] = theta^(-2i/head_dim), in float32 as HF computes it
        # whatever the model's dtype (float64 when asked).
        exponent = torch.arange(0, self.head_dim, 2, dtype=torch.int64).to(fdt) / self.head_dim
        inv_freq = 1.0 / (theta**exponent)
        if scaling is None:
            return inv_freq
        if scaling[0] == "linear":
            return inv_freq / scaling[1]
        # llama3: per _compute_llama3_parameters.
        _, factor, low, high, original = scaling
        low_freq_wavelen = original / low
        high_freq_wavelen = original / high
        wavelen = 2 * math.pi / inv_freq
        stretched = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
        smooth = (original / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * stretched / factor + smooth * stretched
        medium = ~(wavelen < high_freq_wavelen) & ~(wavelen > low_freq_wavelen)
        return torch.where(medium, smoothed, stretched)

    def rope_tables(self, n, theta, scaling):
        fdt = torch.float64 if self.dtype == torch.float64 else torch.float32
        inv_freq = self.inv_freq(theta, scaling, fdt)
        angles = torch.arange(n, dtype=torch.int64).to(fdt)[:, None] * inv_freq[None, :]
        angles = torch.cat([angles, angles], dim=-1)  # [n, head_dim]: both halves
        return angles.cos().to(self.dtype), angles.sin().to(self.dtype)

    @staticmethod
    def rotate_half(x):
        # (x1, x2) -> (-x2, x1) over the two halves of the last dimension.
        half = x.shape[-1] // 2
        return torch.cat([-x[..., half:], x[..., :half]], dim=-1)

    def attention(self, blk, x, cos, sin, window):
        n = x.shape[0]
        hd = self.head_dim
        q = self.apply(blk["q"], x).view(n, self.heads, hd)
        k = self.apply(blk["k"], x).view(n, self.kv_heads, hd)
        v = self.apply(blk["v"], x).view(n, self.kv_heads, hd).transpose(0, 1)
        if self.qk_norm:
            # Over each head's head_dim values, before RoPE.
            q = self.rms_norm(q, blk["q_norm"])
            k = self.rms_norm(k, blk["k_norm"])
        q, k = q.transpose(0, 1), k.transpose(0, 1)  # [H, n, hd]
        q = q * cos + self.rotate_half(q) * sin
        k = k * cos + self.rotate_half(k) * sin
        # Query head h reads key/value head h // (heads / kv_heads).
        group = self.heads // self.kv_heads
        k = k.repeat_interleave(group, dim=0)
        v = v.repeat_interleave(group, dim=0)
        scores = (q @ k.transpose(1, 2)) * self.scaling_q
        qi = torch.arange(n)[:, None]
        ki = torch.arange(n)[None, :]
        hidden = ki > qi  # the future
        if window is not None:
            hidden = hidden | (ki <= qi - window)  # before the window
        scores = scores.masked_fill(hidden, float("-inf"))
        probs = torch.softmax(scores.to(torch.promote_types(scores.dtype, torch.float32)), dim=-1).to(q.dtype)
        out = (probs @ v).transpose(0, 1).reshape(n, self.heads * hd)
        return self.apply(blk["o"], out)

    def mlp(self, blk, x):
        gate = self.apply(blk["gate"], x)
        if self.gemma:
            act = torch.nn.functional.gelu(gate, approximate="tanh")
        else:
            act = torch.nn.functional.silu(gate)
        return self.apply(blk["down"], act * self.apply(blk["up"], x))

    @torch.no_grad()
    def logits(self, ids):
        ids = torch.tensor(ids, dtype=torch.int64)
        if ids.numel() == 0:
            return torch.zeros(0, self.head.shape[0], dtype=self.dtype)
        if int(ids.min()) < 0 or int(ids.max()) >= self.embed.shape[0]:
            raise SystemExit(f"token id out of range [0, {self.embed.shape[0]})")
        x = self.embed[ids]
        if self.embed_scale is not None:
            x = x * self.embed_scale
        n = ids.numel()
        rope_global = self.rope_tables(n, self.theta, self.scaling)
        rope_local = rope_global
        if self.gemma:
            # Gemma 3's sliding layers: base rope_local_base_freq, no scaling.
            rope_local = self.rope_tables(n, self.local_theta, None)
        for i, blk in enumerate(self.blocks):
            sliding = self.sliding[i]
            cos, sin = rope_local if sliding else rope_global
            window = self.window if sliding else None
            if self.gemma:
                h = self.attention(blk, self.rms_norm(x, blk["in_norm"]), cos, sin, window)
                x = x + self.rms_norm(h, blk["post_norm"])
                h = self.mlp(blk, self.rms_norm(x, blk["pre_ff_norm"]))
                x = x + self.rms_norm(h, blk["post_ff_norm"])
            else:
                x = x + self.attention(blk, self.rms_norm(x, blk["in_norm"]), cos, sin, window)
                x = x + self.mlp(blk, self.rms_norm(x, blk["post_norm"]))
        return self.rms_norm(x, self.norm) @ self.head.T


def run(model_dir, ids, dtype_name):
    dtype = {"float32": torch.float32, "float64": torch.float64}[dtype_name]
    model = Decoder(model_dir, dtype)
    return {"dtype": dtype_name, "logits": [model.logits(seq).tolist() for seq in ids]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="?", help="the Hugging Face model directory")
    ap.add_argument("ids", nargs="?", help="JSON list of token-id lists (default: stdin)")
    ap.add_argument("--float64", action="store_true", help="compute in float64")
    ap.add_argument("--batch", action="store_true", help="read several requests from stdin")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.batch:
        reqs = json.load(sys.stdin)["requests"]
        out = {"results": [run(r["dir"], r["ids"], r.get("dtype", "float32")) for r in reqs]}
    else:
        if a.dir is None:
            ap.error("DIR is required without --batch")
        ids = json.loads(a.ids) if a.ids is not None else json.load(sys.stdin)
        if isinstance(ids, dict):
            ids = ids["ids"]
        if ids and isinstance(ids[0], int):
            ids = [ids]
        out = run(a.dir, ids, "float64" if a.float64 else "float32")
    json.dump(out, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
