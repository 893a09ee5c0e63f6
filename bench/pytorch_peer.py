#!/usr/bin/python3
"""The PyTorch peer numbers of the README, reproducible: a Qwen3-shaped decoder written as Hugging Face's
eager implementation runs it (RMSNorm, per-head q/k RMSNorm, NEOX RoPE, repeat_kv, materialised causal
attention, SwiGLU, tied output layer), random weights, on the CPU.

  train:    one training step (forward, cross-entropy over every token, backward, AdamW) on
            --batch x --seq tokens, f32 or bf16 autocast; prints tokens/s.
  generate: --prompts sequences of --prompt-len random tokens, one batched prefill, then --new-tokens decode
            steps with a key/value cache (a static batch, as HF generate runs it); prints generated tokens/s.

Needs Debian's python3-torch (PyTorch 1.13: `apt-get install python3-torch libopenblas0-pthread`; with the
reference BLAS as libblas.so.3 it is ~30x slower), run by Debian's /usr/bin/python3 (not another python3 on
the PATH). The shape defaults to the `small` preset (hidden 512, 8 layers, 8 heads / 4 kv heads, head_dim
64, ffn 1536, vocab 384). The last stdout line is JSON, naming the libblas.so.3 in use.

  /usr/bin/python3 bench/pytorch_peer.py train --dtype f32
  /usr/bin/python3 bench/pytorch_peer.py train --dtype bf16
  /usr/bin/python3 bench/pytorch_peer.py generate --dtype bf16
"""
import argparse
import json
import math
import os
import time

import torch
import torch.nn.functional as F


class Config:
    def __init__(self, a):
        self.vocab, self.hidden, self.ffn, self.layers = a.vocab, a.hidden, a.ffn, a.layers
        self.heads, self.kv_heads, self.head_dim = a.heads, a.kv_heads, a.head_dim
        self.eps, self.theta = 1e-6, 1e6


class RMSNorm(torch.nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rope_tables(c, positions):
    inv = 1.0 / (c.theta ** (torch.arange(0, c.head_dim, 2, dtype=torch.float32) / c.head_dim))
    freqs = positions.float()[:, None] * inv[None, :]
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def repeat_kv(x, n):
    if n == 1:
        return x
    b, k, s, d = x.shape
    return x[:, :, None, :, :].expand(b, k, n, s, d).reshape(b, k * n, s, d)


class Attention(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.q_proj = torch.nn.Linear(c.hidden, c.heads * c.head_dim, bias=False)
        self.k_proj = torch.nn.Linear(c.hidden, c.kv_heads * c.head_dim, bias=False)
        self.v_proj = torch.nn.Linear(c.hidden, c.kv_heads * c.head_dim, bias=False)
        self.o_proj = torch.nn.Linear(c.heads * c.head_dim, c.hidden, bias=False)
        self.q_norm = RMSNorm(c.head_dim, c.eps)
        self.k_norm = RMSNorm(c.head_dim, c.eps)

    def forward(self, x, cos, sin, cache=None):
        c = self.c
        b, s, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(b, s, c.heads, c.head_dim)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(b, s, c.kv_heads, c.head_dim)).transpose(1, 2)
        v = self.v_proj(x).view(b, s, c.kv_heads, c.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if cache is not None:
            if cache[0] is not None:
                k = torch.cat([cache[0], k], dim=2)
                v = torch.cat([cache[1], v], dim=2)
            cache[0], cache[1] = k, v
        k, v = repeat_kv(k, c.heads // c.kv_heads), repeat_kv(v, c.heads // c.kv_heads)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(c.head_dim)
        t = k.shape[2]
        if s > 1:  # causal mask over the new rows (decode rows see every cached key)
            mask = torch.full((s, t), float("-inf")).triu(t - s + 1)
            scores = scores + mask
        p = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        o = torch.matmul(p, v).transpose(1, 2).reshape(b, s, c.heads * c.head_dim)
        return self.o_proj(o)


class Layer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = RMSNorm(c.hidden, c.eps)
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c.hidden, c.eps)
        self.gate_proj = torch.nn.Linear(c.hidden, c.ffn, bias=False)
        self.up_proj = torch.nn.Linear(c.hidden, c.ffn, bias=False)
        self.down_proj = torch.nn.Linear(c.ffn, c.hidden, bias=False)

    def forward(self, x, cos, sin, cache=None):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, cache)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Model(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed_tokens = torch.nn.Embedding(c.vocab, c.hidden)
        self.layers = torch.nn.ModuleList([Layer(c) for _ in range(c.layers)])
        self.norm = RMSNorm(c.hidden, c.eps)
        for p in self.parameters():
            if p.dim() == 2:
                torch.nn.init.normal_(p, std=0.02)

    def forward(self, ids, start=0, caches=None):
        positions = torch.arange(start, start + ids.shape[1])
        cos, sin = rope_tables(self.c, positions)
        x = self.embed_tokens(ids)
        for i, layer in enumerate(self.layers):
            x = layer(x, cos, sin, None if caches is None else caches[i])
        return F.linear(self.norm(x), self.embed_tokens.weight)  # tied output layer


def autocast(dtype):
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == "bf16")


def bench_train(a, model):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    ids = torch.randint(0, a.vocab, (a.batch, a.seq))

    def step():
        with autocast(a.dtype):
            logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, a.vocab), ids[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(a.warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    secs = (time.perf_counter() - t0) / a.steps
    return {"tokens_per_s": a.batch * a.seq / secs, "step_s": secs}


@torch.no_grad()
def bench_generate(a, model):
    def run():
        ids = torch.randint(0, a.vocab, (a.prompts, a.prompt_len))
        caches = [[None, None] for _ in model.layers]
        with autocast(a.dtype):
            logits = model(ids, 0, caches)
            token = logits[:, -1].float().argmax(-1, keepdim=True)
            for i in range(1, a.new_tokens):
                logits = model(token, a.prompt_len + i - 1, caches)
                probs = F.softmax(logits[:, -1].float(), dim=-1)
                token = torch.multinomial(probs, 1)

    for _ in range(a.warmup):
        run()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        run()
    secs = (time.perf_counter() - t0) / a.steps
    return {"generated_tokens_per_s": a.prompts * a.new_tokens / secs, "run_s": secs}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["train", "generate"])
    p.add_argument("--dtype", choices=["f32", "bf16"], default="f32", help="bf16: torch.autocast on the CPU")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--prompts", type=int, default=128)
    p.add_argument("--prompt-len", type=int, default=64)
    p.add_argument("--new-tokens", type=int, default=64)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--vocab", type=int, default=384)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--ffn", type=int, default=1536)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--kv-heads", type=int, default=4)
    p.add_argument("--head-dim", type=int, default=64)
    a = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    model = Model(Config(a))
    out = bench_train(a, model) if a.mode == "train" else bench_generate(a, model)
    out.update({"mode": a.mode, "dtype": a.dtype, "threads": a.threads, "torch": torch.__version__,
                "libblas": os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
