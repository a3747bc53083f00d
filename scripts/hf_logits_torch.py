#!/usr/bin/env python3
"""An independent reference for the logits of a Hugging Face decoder directory.

It implements, in plain PyTorch and without transformers, the forward pass
of the two architectures agentrl loads (model/native.LoadHF) as Hugging
Face's modeling_qwen2.py and modeling_llama.py define them:

  * Qwen2ForCausalLM (model_type "qwen2"): q/k/v projections with biases,
    o_proj without;
  * LlamaForCausalLM (model_type "llama", the Llama-3.0 shape): no biases
    unless attention_bias (then q/k/v/o all have one) or mlp_bias;

both with token embeddings, pre-norm blocks (RMSNorm computed in float32,
eps = rms_norm_eps), rotary position embeddings with base rope_theta in the
rotate-half layout (the two halves of each head, not interleaved pairs),
grouped-query causal attention scaled by 1/sqrt(head_dim), a SwiGLU MLP
down(silu(gate(x)) * up(x)), a final RMSNorm and the LM head (the embedding
matrix when tie_word_embeddings). The RoPE base is rope_parameters'
rope_theta (transformers 5's config.json) or rope_theta (transformers 4's);
keys absent from config.json take the configuration classes' defaults
(rms_norm_eps 1e-6, rope_theta 10000, untied head). rope_scaling (or a
non-default rope_type), sliding windows and other activations are refused
rather than approximated.

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

SUPPORTED = {"qwen2": "Qwen2ForCausalLM", "llama": "LlamaForCausalLM"}


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


class Decoder:
    def __init__(self, model_dir, dtype):
        with open(os.path.join(model_dir, "config.json")) as f:
            cfg = json.load(f)
        mt = cfg.get("model_type")
        if mt not in SUPPORTED:
            raise SystemExit(f"model_type {mt!r} is not supported (qwen2 or llama)")
        if cfg.get("rope_scaling") is not None:
            raise SystemExit("rope_scaling is not supported")
        # transformers 5 keeps the RoPE settings in rope_parameters (and
        # moves a legacy rope_theta there when it reads an older file).
        rope = cfg.get("rope_parameters") or {}
        if set(rope) - {"rope_theta", "rope_type", "type"} or rope.get("rope_type", rope.get("type", "default")) != "default":
            raise SystemExit(f"rope_parameters {rope} are not supported (only the default RoPE)")
        if cfg.get("hidden_act", "silu") != "silu":
            raise SystemExit(f"hidden_act {cfg['hidden_act']!r} is not supported")
        if mt == "qwen2" and cfg.get("use_sliding_window", False):
            raise SystemExit("use_sliding_window is not supported")
        self.dtype = dtype
        self.hidden = cfg["hidden_size"]
        self.layers = cfg["num_hidden_layers"]
        self.heads = cfg["num_attention_heads"]
        self.kv_heads = cfg.get("num_key_value_heads") or self.heads
        self.head_dim = cfg.get("head_dim") or self.hidden // self.heads
        # The configuration classes' defaults where a key is absent.
        self.eps = cfg.get("rms_norm_eps", 1e-6)
        self.theta = rope.get("rope_theta", cfg.get("rope_theta", 10000.0))
        self.tied = cfg.get("tie_word_embeddings", False)
        if mt == "qwen2":
            self.qkv_bias, self.o_bias, self.mlp_bias = True, False, False
        else:
            bias = cfg.get("attention_bias", False)
            self.qkv_bias, self.o_bias, self.mlp_bias = bias, bias, cfg.get("mlp_bias", False)

        w = read_weights(model_dir)
        used = set()

        def take(name):
            if name not in w:
                raise SystemExit(f"missing tensor {name}")
            used.add(name)
            return torch.from_numpy(np.ascontiguousarray(w[name])).to(dtype)

        def linear(prefix, bias):
            return (take(prefix + ".weight"), take(prefix + ".bias") if bias else None)

        self.embed = take("model.embed_tokens.weight")
        self.blocks = []
        for i in range(self.layers):
            p = f"model.layers.{i}."
            self.blocks.append(
                {
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
            )
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
        # As HF: normalise in (at least) float32, cast back, then scale.
        xf = x.to(torch.promote_types(x.dtype, torch.float32))
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return weight * xf.to(x.dtype)

    @staticmethod
    def apply(lin, x):
        weight, bias = lin
        y = x @ weight.T
        return y if bias is None else y + bias

    def rope_tables(self, n):
        # inv_freq[i] = theta^(-2i/head_dim), angles in float32 (HF computes
        # them in float32 whatever the model's dtype) unless float64 asked.
        fdt = torch.float64 if self.dtype == torch.float64 else torch.float32
        exponent = torch.arange(0, self.head_dim, 2, dtype=torch.int64).to(fdt) / self.head_dim
        inv_freq = 1.0 / (self.theta**exponent)
        angles = torch.arange(n, dtype=torch.int64).to(fdt)[:, None] * inv_freq[None, :]
        angles = torch.cat([angles, angles], dim=-1)  # [n, head_dim]: both halves
        return angles.cos().to(self.dtype), angles.sin().to(self.dtype)

    @staticmethod
    def rotate_half(x):
        # (x1, x2) -> (-x2, x1) over the two halves of the last dimension.
        half = x.shape[-1] // 2
        return torch.cat([-x[..., half:], x[..., :half]], dim=-1)

    def attention(self, blk, x, cos, sin):
        n = x.shape[0]
        hd = self.head_dim
        q = self.apply(blk["q"], x).view(n, self.heads, hd).transpose(0, 1)  # [H, n, hd]
        k = self.apply(blk["k"], x).view(n, self.kv_heads, hd).transpose(0, 1)
        v = self.apply(blk["v"], x).view(n, self.kv_heads, hd).transpose(0, 1)
        q = q * cos + self.rotate_half(q) * sin
        k = k * cos + self.rotate_half(k) * sin
        # Query head h reads key/value head h // (heads / kv_heads).
        group = self.heads // self.kv_heads
        k = k.repeat_interleave(group, dim=0)
        v = v.repeat_interleave(group, dim=0)
        scores = (q @ k.transpose(1, 2)) * (1.0 / math.sqrt(hd))
        future = torch.ones(n, n, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
        probs = torch.softmax(scores.to(torch.promote_types(scores.dtype, torch.float32)), dim=-1).to(q.dtype)
        out = (probs @ v).transpose(0, 1).reshape(n, self.heads * hd)
        return self.apply(blk["o"], out)

    def mlp(self, blk, x):
        return self.apply(blk["down"], torch.nn.functional.silu(self.apply(blk["gate"], x)) * self.apply(blk["up"], x))

    @torch.no_grad()
    def logits(self, ids):
        ids = torch.tensor(ids, dtype=torch.int64)
        if ids.numel() == 0:
            return torch.zeros(0, self.head.shape[0], dtype=self.dtype)
        if int(ids.min()) < 0 or int(ids.max()) >= self.embed.shape[0]:
            raise SystemExit(f"token id out of range [0, {self.embed.shape[0]})")
        x = self.embed[ids]
        cos, sin = self.rope_tables(ids.numel())
        for blk in self.blocks:
            x = x + self.attention(blk, self.rms_norm(x, blk["in_norm"]), cos, sin)
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
