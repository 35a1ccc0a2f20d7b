#!/usr/bin/python3
"""PyTorch reference for the rollout benchmark (bench/rollout/bench.sh).

The same generation as bench/rollout/main.go: B prompts of P tokens
(ids[b][t] = 4 + (b*131 + t*71) mod (V-4)), N new tokens each with no stop
ids, sampled at T=0.6, top-p 0.95, with the log-prob of each sampled token
(log_softmax of the unmodified logits, as the Go engine returns). The
decoder is written here in torch (no transformers library), Hugging Face's
Qwen2 / Qwen3 / Llama math, float32 weights read from the safetensors
(bf16 widened), with a KV cache preallocated once per call:

    cache k, v   [L] x [B, Hkv, P+N, D]
    prefill      one batched causal pass over the B x P prompt tokens
    decode       N-1 steps of one token per sequence, q of the g = Hq/Hkv
                 heads sharing a KV head batched as [B, Hkv, g, D]

All sequences have the same length, so no masking or padding is needed in
decode (a setup that favours the reference: the Go engine runs ragged).

    /usr/bin/python3 bench/rollout/bench.py --model DIR --batch 8 --prompt 32 --new 64 [--threads 2] [--reps 3] [--dtype f32|bf16]
    /usr/bin/python3 bench/rollout/bench.py --model DIR --check dump.json

--dtype bf16 decodes under torch.autocast("cpu", dtype=torch.bfloat16)
with the linear and LM-head weights stored in bf16 once (matmuls in bf16,
the residual stream, norms and softmax in float32).

Prints one JSON line like the Go bench. --check replays the Go engine's
greedy generation (bench -dump) and prints the largest log-prob difference
and the share of equal tokens, to show both compute the same function.
"""

import argparse
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        blob = f.read()
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        a, b = h["data_offsets"]
        raw = blob[a:b]
        if h["dtype"] == "BF16":
            x = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            arr = x.view(np.float32)
        elif h["dtype"] == "F32":
            arr = np.frombuffer(raw, dtype="<f4")
        else:
            sys.exit("bench.py: %s: dtype %s not handled" % (name, h["dtype"]))
        out[name] = torch.from_numpy(arr.reshape(h["shape"]).copy())
    return out


def load(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        c = json.load(f)
    w = {}
    idx = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(idx):
        with open(idx) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    for fn in files:
        w.update(read_safetensors(os.path.join(model_dir, fn)))
    return c, w


def inv_freq(c, D):
    base = c.get("rope_theta", 10000.0)
    f = [base ** (-2.0 * i / D) for i in range(D // 2)]
    rs = c.get("rope_scaling")
    if rs and rs.get("rope_type", rs.get("type")) == "llama3":
        factor, lo, hi, orig = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
        out = []
        for x in f:
            wl = 2 * math.pi / x
            if wl < orig / hi:
                out.append(x)
            elif wl > orig / lo:
                out.append(x / factor)
            else:
                s = (orig / wl - lo) / (hi - lo)
                out.append((1 - s) * x / factor + s * x)
        f = out
    return torch.tensor(f, dtype=torch.float32)


class Decoder:
    def __init__(self, c, w, bf16=False):
        self.bf16 = bf16
        if bf16:  # matrices (not the embedding table, norms or biases) in bf16
            lm = "model.embed_tokens.weight" if c.get("tie_word_embeddings") else "lm_head.weight"
            w = dict(w)
            for name, t in list(w.items()):
                if name.endswith("_proj.weight"):
                    w[name] = t.to(torch.bfloat16)
            w["lm_head.bf16"] = w[lm].to(torch.bfloat16)
        self.c, self.w = c, w
        self.arch = c["model_type"]
        self.C, self.L = c["hidden_size"], c["num_hidden_layers"]
        self.Hq = c["num_attention_heads"]
        self.Hkv = c.get("num_key_value_heads", self.Hq)
        self.D = c.get("head_dim") or self.C // self.Hq
        self.eps = c["rms_norm_eps"]
        self.lm = w["model.embed_tokens.weight"] if c.get("tie_word_embeddings") else w["lm_head.weight"]
        if bf16:
            self.lm = w["lm_head.bf16"]
        self.inv = inv_freq(c, self.D)

    def rms(self, x, wt):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * wt

    def rope(self, x, cos, sin):  # x [B, H, T, D]; cos/sin [T, D/2] or [B, 1, 1, D/2]
        h = self.D // 2
        x1, x2 = x[..., :h], x[..., h:]
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    def layer_qkv(self, l, h):
        p, w = "model.layers.%d.self_attn." % l, self.w
        q = F.linear(h, w[p + "q_proj.weight"], w.get(p + "q_proj.bias"))
        k = F.linear(h, w[p + "k_proj.weight"], w.get(p + "k_proj.bias"))
        v = F.linear(h, w[p + "v_proj.weight"], w.get(p + "v_proj.bias"))
        return q, k, v

    def forward(self, ids, pos0, kc, vc):
        """ids [B, T] at positions pos0..pos0+T-1; appends to the caches;
        returns the logits of the last position [B, V]."""
        B, T = ids.shape
        D, Hq, Hkv, g = self.D, self.Hq, self.Hkv, self.Hq // self.Hkv
        w = self.w
        pos = torch.arange(pos0, pos0 + T, dtype=torch.float32)
        ang = pos[:, None] * self.inv[None, :]
        cos, sin = ang.cos(), ang.sin()
        x = F.embedding(ids, w["model.embed_tokens.weight"])
        S = pos0 + T
        for l in range(self.L):
            p = "model.layers.%d." % l
            h = self.rms(x, w[p + "input_layernorm.weight"])
            q, k, v = self.layer_qkv(l, h)
            q = q.view(B, T, Hq, D).transpose(1, 2)
            k = k.view(B, T, Hkv, D).transpose(1, 2)
            v = v.view(B, T, Hkv, D).transpose(1, 2)
            if self.arch == "qwen3":
                q = self.rms(q, w[p + "self_attn.q_norm.weight"])
                k = self.rms(k, w[p + "self_attn.k_norm.weight"])
            q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
            kc[l][:, :, pos0:S] = k
            vc[l][:, :, pos0:S] = v
            K, V = kc[l][:, :, :S], vc[l][:, :, :S]  # [B, Hkv, S, D]
            qg = q.reshape(B, Hkv, g * T, D) if T == 1 else q.view(B, Hkv, g, T, D).reshape(B, Hkv, g * T, D)
            s = torch.matmul(qg, K.transpose(-1, -2)) / math.sqrt(D)  # [B, Hkv, g*T, S]
            if T > 1:
                qi = torch.arange(T).repeat(g)[:, None] + pos0
                s = s.masked_fill(torch.arange(S)[None, :] > qi, float("-inf"))
            a = torch.matmul(torch.softmax(s, dim=-1), V)  # [B, Hkv, g*T, D]
            a = a.view(B, Hkv, g, T, D).permute(0, 3, 1, 2, 4).reshape(B, T, Hq * D)
            x = x + F.linear(a, w[p + "self_attn.o_proj.weight"])
            h = self.rms(x, w[p + "post_attention_layernorm.weight"])
            m = F.silu(F.linear(h, w[p + "mlp.gate_proj.weight"])) * F.linear(h, w[p + "mlp.up_proj.weight"])
            x = x + F.linear(m, w[p + "mlp.down_proj.weight"])
        x = self.rms(x[:, -1], w["model.norm.weight"])
        return F.linear(x, self.lm)

    def generate(self, prompts, N, temperature, top_p, gen=None):
        """Returns ids [B, N] and their log-probs [B, N]."""
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
            return self._generate(prompts, N, temperature, top_p, gen)

    def _generate(self, prompts, N, temperature, top_p, gen):
        B, P = prompts.shape
        kc = [torch.empty(B, self.Hkv, P + N, self.D) for _ in range(self.L)]
        vc = [torch.empty(B, self.Hkv, P + N, self.D) for _ in range(self.L)]
        ids = torch.empty(B, N, dtype=torch.long)
        lps = torch.empty(B, N)
        logits = self.forward(prompts, 0, kc, vc)
        for t in range(N):
            logits = logits.float()
            lsm = torch.log_softmax(logits, dim=-1)
            if temperature == 0:
                tok = logits.argmax(-1)
            else:
                probs = torch.softmax(logits / temperature, dim=-1)
                sp, si = probs.sort(dim=-1, descending=True)
                cum = sp.cumsum(-1)
                sp = sp.masked_fill(cum - sp >= top_p, 0.0)  # keep the shortest prefix with mass >= top_p
                tok = si.gather(-1, torch.multinomial(sp, 1, generator=gen)).squeeze(-1)
            ids[:, t] = tok
            lps[:, t] = lsm.gather(-1, tok[:, None]).squeeze(-1)
            if t + 1 < N:
                logits = self.forward(tok[:, None], P + t, kc, vc)
        return ids, lps


def prompts(B, P, V):
    return torch.tensor([[4 + (b * 131 + t * 71) % (V - 4) for t in range(P)] for b in range(B)], dtype=torch.long)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=32)
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--group", type=int, default=1,
                    help="samples per prompt: batch/group prompts, each repeated group times before prefill "
                         "(what Hugging Face generate(num_return_sequences=group) does)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--check", metavar="DUMP", help="compare with the Go engine's greedy dump")
    ap.add_argument("--dtype", choices=("f32", "bf16"), default="f32")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    c, w = load(a.model)
    dec = Decoder(c, w, bf16=a.dtype == "bf16")
    with torch.inference_mode():
        if a.check:
            with open(a.check) as f:
                rows = json.load(f)
            worst, same, total = 0.0, 0, 0
            for r in rows:
                p = torch.tensor([r["prompt"]], dtype=torch.long)
                # Teacher-force the Go tokens: log-probs of the same ids.
                kc = [torch.empty(1, dec.Hkv, len(r["prompt"]) + len(r["ids"]), dec.D) for _ in range(dec.L)]
                vc = [torch.empty(1, dec.Hkv, len(r["prompt"]) + len(r["ids"]), dec.D) for _ in range(dec.L)]
                logits = dec.forward(p, 0, kc, vc)
                for t, tok in enumerate(r["ids"]):
                    lp = float(torch.log_softmax(logits, -1)[0, tok])
                    worst = max(worst, abs(lp - r["logprobs"][t]))
                    same += int(int(logits.argmax(-1)[0]) == tok)
                    total += 1
                    logits = dec.forward(torch.tensor([[tok]]), len(r["prompt"]) + t, kc, vc)
            print(json.dumps({"check": a.check, "tokens": total, "max_abs_logprob_diff": worst, "greedy_agree": same / max(total, 1)}))
            return
        V = c["vocab_size"]
        if a.batch % a.group:
            sys.exit("bench.py: --batch %d is not a multiple of --group %d" % (a.batch, a.group))
        ps = prompts(a.batch // a.group, a.prompt, V).repeat_interleave(a.group, dim=0)
        gen = torch.Generator().manual_seed(1)
        dec.generate(ps, min(a.new, 4), 0.6, 0.95, gen)  # warm-up (threads, allocator)
        best = float("inf")
        for _ in range(a.reps):
            t0 = time.perf_counter()
            ids, _ = dec.generate(ps, a.new, 0.6, 0.95, gen)
            best = min(best, time.perf_counter() - t0)
            assert ids.shape == (a.batch, a.new)
    print(json.dumps({"model": os.path.basename(os.path.normpath(a.model)), "batch": a.batch, "g": a.group, "prompt": a.prompt, "new": a.new,
                      "tokens_per_s": a.batch * a.new / best, "seconds": best, "reps": a.reps, "threads": torch.get_num_threads(), "dtype": a.dtype,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
