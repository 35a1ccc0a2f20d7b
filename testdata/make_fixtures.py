#!/usr/bin/python3
"""argrl PyTorch fixtures: tiny random decoders in the Hugging Face layout,
with reference log-probs, LoRA log-probs and LoRA gradients.

Run (by `make fixtures`, never by `make test`; Debian's python3-torch):

    /usr/bin/python3 testdata/make_fixtures.py                 # writes testdata/models/*
    /usr/bin/python3 testdata/make_fixtures.py --small DIR      # bench model (not committed)

The decoder math is written here (no transformers library), following
Hugging Face's Qwen2 / Qwen3 / Llama modeling code:

    RMSNorm(x) = x * rsqrt(mean(x^2) + eps) * w
    RoPE       rotate-half: x*cos + rotate_half(x)*sin, cos/sin of pos*inv_freq
               inv_freq = theta^(-2i/D), Llama-3 scaling when configured
    attention  causal softmax(q k^T / sqrt(D)) v, GQA by repeating kv heads
    MLP        down(silu(gate(x)) * up(x))
    qwen2      biases on q, k, v;  qwen3: RMSNorm over D on each q and k head
    LoRA       W x + (alpha/r) * B A x on q,k,v,o,gate,up,down

The reference is computed in float64 from the weights as stored (bf16 models
included), so it is the exact function of the checkpoint. Before anything
is written the script checks its oracle: a second, independent numpy
implementation (explicit loops, token-by-token with a KV cache) must give
the same log-probs, the padded batch must equal per-sequence evaluation, and
the LoRA gradients must equal central finite differences.
See testdata/README.md for the files and the exact loss.
"""

import argparse
import json
import math
import os
import shutil
import struct
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
DT_NAME = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16", torch.float64: "F64"}

# ---------------------------------------------------------------- safetensors


def write_safetensors(path, tensors, metadata=None):
    """Writes {name: torch.Tensor}: sorted keys, 8-byte padded header."""
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        if t.dtype == torch.bfloat16:
            b = t.view(torch.int16).numpy().astype("<i2").tobytes()
        else:
            b = t.numpy().tobytes()  # little-endian host (checked in main)
        header[name] = {"dtype": DT_NAME[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    hj = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    hj += b" " * ((8 - len(hj) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)))
        f.write(hj)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """Reads a file into {name: float64 numpy array}, decoding bf16 by bit
    shifting (independently of torch's conversion)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b = data[base + e["data_offsets"][0] : base + e["data_offsets"][1]]
        if e["dtype"] == "BF16":
            a = (np.frombuffer(b, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            a = np.frombuffer(b, dtype={"F32": "<f4", "F64": "<f8", "F16": "<f2"}[e["dtype"]])
        out[name] = a.astype(np.float64).reshape(e["shape"])
    return out


# ---------------------------------------------------------------- models

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def base_config(arch, tied, dtype):
    c = {
        "vocab_size": 320, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 128,
        "hidden_act": "silu", "initializer_range": 0.02, "tie_word_embeddings": tied,
        "torch_dtype": dtype, "use_cache": True, "attention_dropout": 0.0,
    }
    if arch == "qwen2":
        c.update(model_type="qwen2", architectures=["Qwen2ForCausalLM"], rms_norm_eps=1e-6, rope_theta=1000000.0,
                 rope_scaling=None, use_sliding_window=False, sliding_window=128, max_window_layers=2,
                 bos_token_id=1, eos_token_id=2)
    elif arch == "qwen3":
        c.update(model_type="qwen3", architectures=["Qwen3ForCausalLM"], head_dim=32, attention_bias=False,
                 rms_norm_eps=1e-6, rope_theta=1000000.0, rope_scaling=None, use_sliding_window=False,
                 sliding_window=None, max_window_layers=2, bos_token_id=1, eos_token_id=2)
    elif arch == "llama":
        c.update(model_type="llama", architectures=["LlamaForCausalLM"], head_dim=16, attention_bias=False,
                 mlp_bias=False, rms_norm_eps=1e-5, rope_theta=500000.0, pretraining_tp=1,
                 rope_scaling={"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                               "original_max_position_embeddings": 64, "rope_type": "llama3"},
                 bos_token_id=1, eos_token_id=[2, 3])
    return c


# name, arch, tied, dtype, shards
FIXTURES = [
    ("qwen2-f32", "qwen2", False, "float32", 1),
    ("qwen2-bf16-tied", "qwen2", True, "bfloat16", 1),
    ("qwen3-f32-tied", "qwen3", True, "float32", 1),
    ("qwen3-bf16-sharded", "qwen3", False, "bfloat16", 2),
    ("llama-f32", "llama", False, "float32", 1),
    ("llama-bf16-tied", "llama", True, "bfloat16", 1),
]


def dims(c):
    D = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    return c["hidden_size"], c["intermediate_size"], c["num_attention_heads"], c["num_key_value_heads"], D, c["vocab_size"]


def linear_dims(c):
    C, F, Hq, Hkv, D, V = dims(c)
    return {"q_proj": (C, Hq * D), "k_proj": (C, Hkv * D), "v_proj": (C, Hkv * D), "o_proj": (Hq * D, C),
            "gate_proj": (C, F), "up_proj": (C, F), "down_proj": (F, C)}


def module_path(l, m):
    return "model.layers.%d.%s.%s" % (l, "mlp" if m in ("gate_proj", "up_proj", "down_proj") else "self_attn", m)


def random_weights(c, seed):
    """Random float32 weights {name: tensor} in the HF naming."""
    g = torch.Generator().manual_seed(seed)
    C, F, Hq, Hkv, D, V = dims(c)

    def n(*shape, std=1.0, mean=0.0):
        return torch.randn(*shape, generator=g, dtype=torch.float32) * std + mean

    w = {"model.embed_tokens.weight": n(V, C, std=0.25), "model.norm.weight": n(C, std=0.2, mean=1.0)}
    if not c["tie_word_embeddings"]:
        w["lm_head.weight"] = n(V, C, std=0.25)
    for l in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % l
        w[p + "input_layernorm.weight"] = n(C, std=0.2, mean=1.0)
        w[p + "post_attention_layernorm.weight"] = n(C, std=0.2, mean=1.0)
        for m, (i, o) in linear_dims(c).items():
            w[module_path(l, m) + ".weight"] = n(o, i, std=1.0 / math.sqrt(i))
        if c["model_type"] == "qwen2":
            for m, o in (("q_proj", Hq * D), ("k_proj", Hkv * D), ("v_proj", Hkv * D)):
                w[p + "self_attn.%s.bias" % m] = n(o, std=0.5)
        if c["model_type"] == "qwen3":
            w[p + "self_attn.q_norm.weight"] = n(D, std=0.2, mean=1.0)
            w[p + "self_attn.k_norm.weight"] = n(D, std=0.2, mean=1.0)
    return w


def random_adapter(c, seed, r=4):
    """A fixed LoRA adapter: A ~ U(-1/sqrt(in), 1/sqrt(in)), B ~ N(0, 0.1^2) (nonzero)."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for l in range(c["num_hidden_layers"]):
        for m, (i, o) in linear_dims(c).items():
            p = "base_model.model." + module_path(l, m)
            out[p + ".lora_A.weight"] = (torch.rand(r, i, generator=g) * 2 - 1) / math.sqrt(i)
            out[p + ".lora_B.weight"] = torch.randn(o, r, generator=g) * 0.1
    return out


# ---------------------------------------------------------------- torch reference


def inv_freq_torch(c):
    C, F, Hq, Hkv, D, V = dims(c)
    inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    rs = c.get("rope_scaling")
    if rs and rs.get("rope_type", rs.get("type")) == "llama3":
        factor, lo, hi, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > old / lo, inv / factor, inv)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < old / hi) & ~(wavelen > old / lo)
        inv = torch.where(medium, smoothed, scaled)
    return inv


def rms_norm(x, w, eps):
    return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)) * w


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def forward(c, W, ids, lora=None, scale=0.0):
    """Logits [B, T, V] in float64 for token ids [B, T] (causal; right padding is harmless)."""
    C, F, Hq, Hkv, D, V = dims(c)
    eps = c["rms_norm_eps"]
    B, T = ids.shape

    def linear(x, l, m):
        name = module_path(l, m)
        y = x @ W[name + ".weight"].T
        if name + ".bias" in W:
            y = y + W[name + ".bias"]
        if lora is not None:
            p = "base_model.model." + name
            y = y + scale * ((x @ lora[p + ".lora_A.weight"].T) @ lora[p + ".lora_B.weight"].T)
        return y

    x = W["model.embed_tokens.weight"][ids]
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq_torch(c))
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    for l in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % l
        h = rms_norm(x, W[p + "input_layernorm.weight"], eps)
        q = linear(h, l, "q_proj").view(B, T, Hq, D)
        k = linear(h, l, "k_proj").view(B, T, Hkv, D)
        v = linear(h, l, "v_proj").view(B, T, Hkv, D)
        if c["model_type"] == "qwen3":
            q = rms_norm(q, W[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, W[p + "self_attn.k_norm.weight"], eps)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # [B, H, T, D]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = Hq // Hkv
        k = k[:, :, None].expand(B, Hkv, rep, T, D).reshape(B, Hq, T, D)
        v = v[:, :, None].expand(B, Hkv, rep, T, D).reshape(B, Hq, T, D)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(D)
        s = s.masked_fill(causal, float("-inf"))
        o = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, T, Hq * D)
        x = x + linear(o, l, "o_proj")
        h = rms_norm(x, W[p + "post_attention_layernorm.weight"], eps)
        x = x + linear(torch.nn.functional.silu(linear(h, l, "gate_proj")) * linear(h, l, "up_proj"), l, "down_proj")
    x = rms_norm(x, W["model.norm.weight"], eps)
    head = W["model.embed_tokens.weight"] if c["tie_word_embeddings"] else W["lm_head.weight"]
    return x @ head.T


def token_logprobs(logits, ids):
    """lp[b, t] = log p(ids[b, t] | ids[b, <t]) for t >= 1; lp[b, 0] = 0."""
    lsm = torch.log_softmax(logits, dim=-1)
    lp = torch.zeros(ids.shape, dtype=torch.float64)
    lp[:, 1:] = lsm[:, :-1].gather(-1, ids[:, 1:, None])[..., 0]
    return lp


def masked_nll(lp, mask):
    return -(lp * mask).sum() / mask.sum()


# ---------------------------------------------------------------- independent numpy oracle


def np_inv_freq(c):
    C, F, Hq, Hkv, D, V = dims(c)
    out = []
    rs = c.get("rope_scaling") or {}
    for i in range(D // 2):
        f = c["rope_theta"] ** (-(2.0 * i) / D)
        if rs.get("rope_type") == "llama3":
            wave = 2 * math.pi / f
            old = rs["original_max_position_embeddings"]
            if wave < old / rs["high_freq_factor"]:
                pass
            elif wave > old / rs["low_freq_factor"]:
                f = f / rs["factor"]
            else:
                s = (old / wave - rs["low_freq_factor"]) / (rs["high_freq_factor"] - rs["low_freq_factor"])
                f = (1 - s) * f / rs["factor"] + s * f
        out.append(f)
    return out


def np_logprobs(c, W, seq, lora=None, scale=0.0):
    """One sequence, token by token with a KV cache, explicit loops over heads,
    rotary pairs and cached positions. Returns [None, lp1, ...]."""
    C, F, Hq, Hkv, D, V = dims(c)
    eps, L, half = c["rms_norm_eps"], c["num_hidden_layers"], D // 2
    inv = np_inv_freq(c)

    def norm(x, w):
        return x / math.sqrt(float(np.dot(x, x)) / len(x) + eps) * w

    def lin(x, l, m):
        name = module_path(l, m)
        y = W[name + ".weight"].dot(x)
        if name + ".bias" in W:
            y = y + W[name + ".bias"]
        if lora is not None:
            p = "base_model.model." + name
            y = y + scale * lora[p + ".lora_B.weight"].dot(lora[p + ".lora_A.weight"].dot(x))
        return y

    def rope(v, pos):
        out = np.empty(D)
        for i in range(half):
            a = pos * inv[i]
            out[i] = v[i] * math.cos(a) - v[i + half] * math.sin(a)
            out[i + half] = v[i + half] * math.cos(a) + v[i] * math.sin(a)
        return out

    kc = [[[] for _ in range(Hkv)] for _ in range(L)]
    vc = [[[] for _ in range(Hkv)] for _ in range(L)]
    head = W["model.embed_tokens.weight"] if c["tie_word_embeddings"] else W["lm_head.weight"]
    out = [None]
    for t, tok in enumerate(seq):
        x = W["model.embed_tokens.weight"][tok].copy()
        for l in range(L):
            p = "model.layers.%d." % l
            h = norm(x, W[p + "input_layernorm.weight"])
            q, k, v = lin(h, l, "q_proj"), lin(h, l, "k_proj"), lin(h, l, "v_proj")
            for j in range(Hkv):
                kj = k[j * D : (j + 1) * D]
                if c["model_type"] == "qwen3":
                    kj = norm(kj, W[p + "self_attn.k_norm.weight"])
                kc[l][j].append(rope(kj, t))
                vc[l][j].append(v[j * D : (j + 1) * D])
            o = np.zeros(Hq * D)
            for hh in range(Hq):
                qh = q[hh * D : (hh + 1) * D]
                if c["model_type"] == "qwen3":
                    qh = norm(qh, W[p + "self_attn.q_norm.weight"])
                qh = rope(qh, t)
                j = hh // (Hq // Hkv)
                sc = [float(np.dot(qh, kk)) / math.sqrt(D) for kk in kc[l][j]]
                mx = max(sc)
                e = [math.exp(s - mx) for s in sc]
                z = sum(e)
                for pos in range(len(e)):
                    o[hh * D : (hh + 1) * D] += e[pos] / z * vc[l][j][pos]
            x = x + lin(o, l, "o_proj")
            h = norm(x, W[p + "post_attention_layernorm.weight"])
            g = lin(h, l, "gate_proj")
            x = x + lin(g / (1 + np.exp(-g)) * lin(h, l, "up_proj"), l, "down_proj")
        logits = head.dot(norm(x, W["model.norm.weight"]))
        if t + 1 < len(seq):
            mx = logits.max()
            out.append(float(logits[seq[t + 1]] - mx - math.log(np.exp(logits - mx).sum())))
    return out


# ---------------------------------------------------------------- fixtures

SEQ_LENS = [16, 9, 12, 2]
PROMPT_LENS = [5, 3, 7, 1]  # the loss covers tokens t >= prompt_len (and t >= 1)
PAD_ID = 0
LORA_R, LORA_ALPHA = 4, 8.0


def batch(V, seed=1234):
    g = torch.Generator().manual_seed(seed)
    seqs = [torch.randint(3, V, (n,), generator=g).tolist() for n in SEQ_LENS]
    T = max(SEQ_LENS)
    ids = torch.full((len(seqs), T), PAD_ID, dtype=torch.long)
    mask = torch.zeros(len(seqs), T, dtype=torch.float64)
    for b, s in enumerate(seqs):
        ids[b, : len(s)] = torch.tensor(s)
        mask[b, max(1, PROMPT_LENS[b]) : len(s)] = 1
    return seqs, ids, mask


def check(cond, msg):
    if not cond:
        sys.exit("make_fixtures: oracle check failed: " + msg)


def max_diff(a, b):
    return max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb) if x is not None)


def write_model(out, name, arch, tied, dtype, shards, seed):
    c = base_config(arch, tied, dtype)
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(c, f, indent=2, sort_keys=True)
        f.write("\n")
    tdt = torch.bfloat16 if dtype == "bfloat16" else torch.float32
    w = {k: v.to(tdt) for k, v in random_weights(c, seed).items()}
    if shards == 1:
        write_safetensors(os.path.join(d, "model.safetensors"), w, {"format": "pt"})
        files = ["model.safetensors"]
    else:  # embedding + layer 0 in the first shard, the rest in the second
        parts = [{}, {}]
        for k, v in w.items():
            parts[0 if (k.startswith("model.embed_tokens") or k.startswith("model.layers.0.")) else 1][k] = v
        files, wm, total = [], {}, 0
        for i, part in enumerate(parts):
            fn = "model-%05d-of-%05d.safetensors" % (i + 1, len(parts))
            write_safetensors(os.path.join(d, fn), part, {"format": "pt"})
            files.append(fn)
            for k, v in part.items():
                wm[k] = fn
                total += v.numel() * v.element_size()
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": wm}, f, indent=2, sort_keys=True)
            f.write("\n")
    # Read back what was written: the reference is a function of the files.
    Wn = {}
    for fn in files:
        Wn.update(read_safetensors(os.path.join(d, fn)))
    check(set(Wn) == set(w), name + ": tensors read back differ")
    for k, v in w.items():
        check(np.array_equal(Wn[k], v.to(torch.float64).numpy()), name + ": " + k + " read back differs")
    W = {k: torch.from_numpy(v) for k, v in Wn.items()}

    # Adapter in PEFT layout (float32 on disk).
    ad = random_adapter(c, seed + 1, LORA_R)
    ad_dir = os.path.join(d, "adapter")
    os.makedirs(ad_dir)
    write_safetensors(os.path.join(ad_dir, "adapter_model.safetensors"), ad, {"format": "pt"})
    peft_cfg = {
        "alpha_pattern": {}, "auto_mapping": None, "base_model_name_or_path": "testdata/models/" + name,
        "bias": "none", "fan_in_fan_out": False, "inference_mode": True, "init_lora_weights": True,
        "layer_replication": None, "layers_pattern": None, "layers_to_transform": None, "loftq_config": {},
        "lora_alpha": LORA_ALPHA, "lora_dropout": 0.0, "megatron_config": None, "megatron_core": "megatron.core",
        "modules_to_save": None, "peft_type": "LORA", "r": LORA_R, "rank_pattern": {}, "revision": None,
        "target_modules": TARGETS, "task_type": "CAUSAL_LM", "use_dora": False, "use_rslora": False,
    }
    with open(os.path.join(ad_dir, "adapter_config.json"), "w") as f:
        json.dump(peft_cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    An = read_safetensors(os.path.join(ad_dir, "adapter_model.safetensors"))
    scale = LORA_ALPHA / LORA_R

    seqs, ids, mask = batch(c["vocab_size"])
    T = ids.shape[1]
    logits = forward(c, W, ids)
    lp = token_logprobs(logits, ids)
    # Oracle check 1: padded batch == each sequence alone.
    for b, s in enumerate(seqs):
        alone = token_logprobs(forward(c, W, torch.tensor([s])), torch.tensor([s]))[0]
        check(torch.allclose(alone, lp[b, : len(s)], rtol=0, atol=1e-12), name + ": padded batch differs from per-sequence")

    lora = {k: torch.from_numpy(v).clone().requires_grad_(True) for k, v in An.items()}
    lora_logits = forward(c, W, ids, lora, scale)
    lora_lp = token_logprobs(lora_logits, ids)
    loss = masked_nll(lora_lp, mask)
    loss.backward()
    grads = {k: v.grad.detach().clone() for k, v in lora.items()}

    def as_lists(t):
        return [[None] + [float(t[b, i]) for i in range(1, len(s))] for b, s in enumerate(seqs)]

    lp_l, lora_lp_l = as_lists(lp), as_lists(lora_lp.detach())
    # Oracle check 2: the independent loop implementation agrees.
    np_base = [np_logprobs(c, Wn, s) for s in seqs]
    np_lora = [np_logprobs(c, Wn, s, An, scale) for s in seqs]
    dif_base, dif_lora = max_diff(lp_l, np_base), max_diff(lora_lp_l, np_lora)
    check(dif_base < 1e-10 and dif_lora < 1e-10, "%s: numpy oracle differs by %g / %g" % (name, dif_base, dif_lora))
    check(max_diff(lp_l, lora_lp_l) > 1e-2, name + ": the adapter barely changes the log-probs")
    # Oracle check 3: gradients against central finite differences.
    g = torch.Generator().manual_seed(seed + 2)
    names = sorted(lora)
    worst = 0.0
    with torch.no_grad():
        for trial in range(12):
            k = names[int(torch.randint(len(names), (1,), generator=g))]
            idx = int(torch.randint(lora[k].numel(), (1,), generator=g))
            h = 1e-6
            flat = lora[k].view(-1)
            old = float(flat[idx])
            flat[idx] = old + h
            lp_plus = masked_nll(token_logprobs(forward(c, W, ids, lora, scale), ids), mask)
            flat[idx] = old - h
            lp_minus = masked_nll(token_logprobs(forward(c, W, ids, lora, scale), ids), mask)
            flat[idx] = old
            fd = float(lp_plus - lp_minus) / (2 * h)
            an = float(grads[k].view(-1)[idx])
            worst = max(worst, abs(fd - an) / max(1e-8, abs(an)))
            check(abs(fd - an) <= 1e-5 * abs(an) + 1e-8, "%s: d loss/d %s[%d]: autograd %g, finite difference %g" % (name, k, idx, an, fd))
    base_loss = float(masked_nll(lp, mask))

    write_safetensors(os.path.join(d, "lora_grads.safetensors"), {k: v.to(torch.float64) for k, v in grads.items()},
                      {"loss": "mean NLL over loss_mask, see testdata/README.md"})
    last = torch.stack([logits[b, len(s) - 1] for b, s in enumerate(seqs)])
    lora_last = torch.stack([lora_logits.detach()[b, len(s) - 1] for b, s in enumerate(seqs)])
    write_safetensors(os.path.join(d, "reference.safetensors"), {"last_logits": last, "lora_last_logits": lora_last})
    ref = {
        "model": name, "pad_id": PAD_ID, "tokens": seqs, "lengths": [len(s) for s in seqs],
        "padded": ids.tolist(), "prompt_lengths": PROMPT_LENS,
        "loss_mask": [[int(mask[b, i]) for i in range(len(s))] for b, s in enumerate(seqs)],
        "logprobs": lp_l, "lora_logprobs": lora_lp_l,
        "loss": base_loss, "lora_loss": float(loss),
        "lora": {"r": LORA_R, "alpha": LORA_ALPHA, "scale": scale, "targets": TARGETS, "dir": "adapter"},
        "rope_inv_freq": inv_freq_torch(c).tolist(),
        "tensor_sums": {k: float(v.sum()) for k, v in sorted(Wn.items())},
        "adapter_sums": {k: float(v.sum()) for k, v in sorted(An.items())},
        "oracle": {"numpy_loop_max_abs_diff": max(dif_base, dif_lora), "grad_fd_max_rel_err": worst},
    }
    with open(os.path.join(d, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1, sort_keys=True)
        f.write("\n")
    size = sum(os.path.getsize(os.path.join(root, fn)) for root, _, fns in os.walk(d) for fn in fns)
    print("%-20s %-6s tied=%-5s %-8s shards=%d  %7.1f KB  loss %.4f lora_loss %.4f  oracle %.1e  fd %.1e"
          % (name, arch, tied, dtype, shards, size / 1024, base_loss, float(loss), max(dif_base, dif_lora), worst))


def write_small(out):
    """The 'small' benchmark model: testdata/bench/small/config.json plus
    deterministic random bf16 weights (not committed)."""
    with open(os.path.join(HERE, "bench", "small", "config.json")) as f:
        c = json.load(f)
    os.makedirs(out, exist_ok=True)
    shutil.copy(os.path.join(HERE, "bench", "small", "config.json"), os.path.join(out, "config.json"))
    w = {k: v.to(torch.bfloat16) for k, v in random_weights(c, 7).items()}
    write_safetensors(os.path.join(out, "model.safetensors"), w, {"format": "pt"})
    n = sum(v.numel() for v in w.values())
    print("small model: %d parameters -> %s" % (n, out))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "models"), help="fixture directory (default testdata/models)")
    ap.add_argument("--small", metavar="DIR", help="only write the small benchmark model into DIR")
    ap.add_argument("--only", metavar="NAME", help="only write the named fixture")
    a = ap.parse_args()
    torch.set_num_threads(1)
    if sys.byteorder != "little":
        sys.exit("make_fixtures: needs a little-endian host")
    if a.small:
        write_small(a.small)
        return
    os.makedirs(a.out, exist_ok=True)
    for i, (name, arch, tied, dtype, shards) in enumerate(FIXTURES):
        if a.only and a.only != name:
            continue
        write_model(a.out, name, arch, tied, dtype, shards, seed=100 * (i + 1))


if __name__ == "__main__":
    main()
