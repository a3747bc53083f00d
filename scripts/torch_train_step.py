#!/usr/bin/env python3
"""The training step of BenchmarkTrainStep (model/native/bench_test.go) in
PyTorch on the CPU, as a speed reference: the same Llama/Qwen2-style decoder
(d_model 128, 2 layers, 4 heads of 32, SwiGLU d_ff 352, vocab 512, tied
embeddings, RMSNorm, rotate-half RoPE), 8 sequences of 256 random tokens,
cross-entropy on every position after the first, backward, global-norm
clipping at 1 and AdamW. It prints one line per thread count:

    torch threads=N ms/step=X

Usage: python3 scripts/torch_train_step.py [--steps 30] [--threads 1,2]
(Debian: apt-get install python3-torch).
"""

import argparse
import math
import time

import torch
import torch.nn.functional as F

V, D, L, H, FF, T, B = 512, 128, 2, 4, 352, 256, 8
HD = D // H


class RMSNorm(torch.nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w


def rope_tables(T, hd, theta=10000.0):
    inv = 1.0 / (theta ** (torch.arange(0, hd // 2, dtype=torch.float32) / (hd // 2)))
    ang = torch.arange(T, dtype=torch.float32)[:, None] * inv[None, :]
    return ang.cos(), ang.sin()


def rope(x, cos, sin):  # x: [B, H, T, hd]
    x1, x2 = x[..., : HD // 2], x[..., HD // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.n1, self.n2 = RMSNorm(D), RMSNorm(D)
        self.qkv = torch.nn.Linear(D, 3 * D, bias=False)
        self.o = torch.nn.Linear(D, D, bias=False)
        self.gu = torch.nn.Linear(D, 2 * FF, bias=False)
        self.down = torch.nn.Linear(FF, D, bias=False)

    def forward(self, x, cos, sin, mask):
        q, k, v = self.qkv(self.n1(x)).view(B, T, 3, H, HD).permute(2, 0, 3, 1, 4)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(HD)
        a = torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1) @ v
        x = x + self.o(a.transpose(1, 2).reshape(B, T, D))
        g, u = self.gu(self.n2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(g) * u)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(V, D)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(L))
        self.norm = RMSNorm(D)

    def forward(self, tok, cos, sin, mask):
        x = self.emb(tok)
        for b in self.blocks:
            x = b(x, cos, sin, mask)
        return self.norm(x) @ self.emb.weight.t()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--threads", default="1,2")
    args = ap.parse_args()
    torch.manual_seed(1)
    model = Model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.01)
    tok = torch.randint(0, V, (B, T))
    cos, sin = rope_tables(T, HD)
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)

    def step():
        opt.zero_grad(set_to_none=True)
        logits = model(tok, cos, sin, mask)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, V), tok[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    for n in [int(x) for x in args.threads.split(",")]:
        torch.set_num_threads(n)
        for _ in range(3):
            step()
        t0 = time.perf_counter()
        for _ in range(args.steps):
            step()
        ms = (time.perf_counter() - t0) / args.steps * 1e3
        print(f"torch threads={n} ms/step={ms:.2f}")


if __name__ == "__main__":
    main()
