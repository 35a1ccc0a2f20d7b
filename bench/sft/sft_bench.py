#!/usr/bin/python3
"""PyTorch reference for trainer/sft_bench_test.go: one LoRA SFT optimizer
step on the small benchmark model, timed the same way.

    /usr/bin/python3 bench/sft/sft_bench.py MODEL_DIR [--batch 4] [--seq 256] [--steps 4] [--threads 2] [--dtype f32|bf16]

--dtype bf16 runs the forward pass and the loss under
torch.autocast("cpu", dtype=torch.bfloat16) (matmuls in bf16 with float32
accumulation, the rest float32), with the frozen linear weights stored in
bf16 once (--cast-weights no: float32, cast by autocast at every call);
f32 is plain float32.

The model is a qwen2 decoder written here in plain torch (float32): RMSNorm,
rotate-half RoPE, grouped-query causal attention, SiLU MLP, q/k/v biases,
tied embeddings. Every linear layer carries LoRA, W x + (alpha/r) B A dropout(x),
r = 32, alpha = 64, dropout 0.05, A Kaiming-uniform, B = 0, as argrl's model
does. A step is forward + backward over B x T tokens with the token-mean NLL
on the last T/2 positions of each sequence, clip_grad_norm_(1.0) and
torch.optim.AdamW(lr 1e-4) over the adapters; the token ids are the Go
benchmark's. Prints one line: "torch tokens/s <median over --steps steps>".
"""
import argparse
import json
import math
import os
import struct
import time

import numpy as np
import torch
import torch.nn.functional as F


def load_safetensors(path):
    """name -> float32 tensor; F32 and BF16 entries (the small model is BF16)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        raw = data[lo:hi]
        if info["dtype"] == "BF16":
            bits = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
            arr = bits.view(np.float32)
        elif info["dtype"] == "F32":
            arr = np.frombuffer(raw, dtype=np.float32)
        else:
            raise SystemExit("%s: dtype %s not handled" % (name, info["dtype"]))
        out[name] = torch.from_numpy(arr.copy()).reshape(info["shape"])
    return out


class LoRALinear(torch.nn.Module):
    def __init__(self, w, b, r, alpha, dropout):
        super().__init__()
        self.w = w  # [out, in], frozen (float32, or bf16 with --dtype bf16)
        self.b = b
        out_f, in_f = w.shape
        self.A = torch.nn.Parameter(torch.empty(r, in_f))
        torch.nn.init.kaiming_uniform_(self.A, a=math.sqrt(5))
        self.B = torch.nn.Parameter(torch.zeros(out_f, r))
        self.scale = alpha / r
        self.drop = torch.nn.Dropout(dropout)

    def forward(self, x):
        y = F.linear(x, self.w, self.b)
        return y + self.scale * F.linear(F.linear(self.drop(x), self.A), self.B)


def rms(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class Qwen2LoRA(torch.nn.Module):
    def __init__(self, cfg, W, r=32, alpha=64, dropout=0.05, wdtype=torch.float32):
        super().__init__()
        self.c = cfg
        C, self.Hq, self.Hkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
        self.D = C // self.Hq
        self.eps = cfg["rms_norm_eps"]
        self.embed = W["model.embed_tokens.weight"]
        head = W["lm_head.weight"] if "lm_head.weight" in W else self.embed
        self.head = head.to(wdtype)
        self.norm = W["model.norm.weight"]
        self.layers = torch.nn.ModuleList()
        for i in range(cfg["num_hidden_layers"]):
            p = "model.layers.%d." % i
            L = torch.nn.Module()
            L.n1, L.n2 = W[p + "input_layernorm.weight"], W[p + "post_attention_layernorm.weight"]
            for m in ("q", "k", "v", "o"):
                name = p + "self_attn.%s_proj." % m
                setattr(L, m, LoRALinear(W[name + "weight"].to(wdtype), W.get(name + "bias"), r, alpha, dropout))
            for m in ("gate", "up", "down"):
                name = p + "mlp.%s_proj." % m
                setattr(L, m, LoRALinear(W[name + "weight"].to(wdtype), None, r, alpha, dropout))
            self.layers.append(L)
        inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, self.D, 2, dtype=torch.float32) / self.D))
        self.inv_freq = inv

    def forward(self, ids):
        Bsz, T = ids.shape
        x = F.embedding(ids, self.embed)
        pos = torch.arange(T, dtype=torch.float32)
        ang = torch.outer(pos, self.inv_freq)
        emb = torch.cat((ang, ang), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        mask = torch.full((T, T), float("-inf")).triu(1)
        rep = self.Hq // self.Hkv
        for L in self.layers:
            h = rms(x, L.n1, self.eps)
            q = L.q(h).view(Bsz, T, self.Hq, self.D).transpose(1, 2)
            k = L.k(h).view(Bsz, T, self.Hkv, self.D).transpose(1, 2)
            v = L.v(h).view(Bsz, T, self.Hkv, self.D).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
            att = (q @ k.transpose(-1, -2)) / math.sqrt(self.D) + mask
            o = (att.softmax(-1) @ v).transpose(1, 2).reshape(Bsz, T, -1)
            x = x + L.o(o)
            h = rms(x, L.n2, self.eps)
            x = x + L.down(F.silu(L.gate(h)) * L.up(h))
        x = rms(x, self.norm, self.eps)
        return x @ self.head.t()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--dtype", choices=("f32", "bf16"), default="f32")
    ap.add_argument("--cast-weights", choices=("yes", "no"), default="yes",
                    help="with --dtype bf16: store the frozen linear weights in bf16 once")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    with open(os.path.join(a.model, "config.json")) as f:
        cfg = json.load(f)
    W = load_safetensors(os.path.join(a.model, "model.safetensors"))
    bf16 = a.dtype == "bf16"
    wdtype = torch.bfloat16 if bf16 and a.cast_weights == "yes" else torch.float32
    model = Qwen2LoRA(cfg, W, wdtype=wdtype)
    del W
    model.train()
    V, B, T = cfg["vocab_size"], a.batch, a.seq
    ids = torch.tensor([[(i * 7919 + t * 104729 + 13) % V for t in range(T)] for i in range(B)])
    mask = torch.zeros(B, T - 1)
    mask[:, T // 2 - 1:] = 1  # predict tokens T/2 .. T-1
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.0)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(ids)
            lp = torch.log_softmax(logits[:, :-1].float(), dim=-1).gather(-1, ids[:, 1:, None])[..., 0]
            loss = -(lp * mask).sum() / mask.sum()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        return loss.item()

    step()  # warm-up
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    times.sort()
    print("torch tokens/s %.1f %s step_s %.3f" % (B * T / times[len(times) // 2], a.dtype, times[len(times) // 2]))


if __name__ == "__main__":
    main()
