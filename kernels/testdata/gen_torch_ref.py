# Generates torch_ref.json: PyTorch (float64, autograd) results that
# kernels/ref_torch_test.go compares the Go references with.
# Run: /usr/bin/python3 kernels/testdata/gen_torch_ref.py  (PyTorch 1.13, CPU)
import json, math, os
import torch
import torch.nn.functional as F

torch.manual_seed(1234)
dt = torch.float64
fx = {"torch": torch.__version__}


def flat(x):
    return x.detach().reshape(-1).tolist()


def leaf(*shape, scale=1.0):
    return (torch.randn(*shape, dtype=dt) * scale).requires_grad_()


# MatMul: C = alpha * op(A) op(B) + beta * C, all transpose combinations.
mm = []
for ta in (False, True):
    for tb in (False, True):
        M, N, K = 3, 4, 5
        a = torch.randn(*((K, M) if ta else (M, K)), dtype=dt)
        b = torch.randn(*((N, K) if tb else (K, N)), dtype=dt)
        c = torch.randn(M, N, dtype=dt)
        y = 0.75 * ((a.T if ta else a) @ (b.T if tb else b)) - 0.5 * c
        mm.append(dict(M=M, N=N, K=K, ta=ta, tb=tb, alpha=0.75, beta=-0.5, a=flat(a), b=flat(b), c=flat(c), out=flat(y)))
fx["matmul"] = mm

# Embedding and its scatter-add gradient (repeated ids).
V, C = 6, 4
ids = [2, 5, 2, 0, 2]
tab = leaf(V, C)
y = F.embedding(torch.tensor(ids), tab)
dy = torch.randn_like(y)
y.backward(dy)
fx["embedding"] = dict(V=V, C=C, ids=ids, table=flat(tab), out=flat(y), dout=flat(dy), dtable=flat(tab.grad))

# RMSNorm as in Hugging Face LlamaRMSNorm / Qwen2RMSNorm.
N, C, eps = 5, 7, 1e-6
x, w = leaf(N, C, scale=2), leaf(C)
rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
y = w * (x * rstd)
dy = torch.randn_like(y)
y.backward(dy)
fx["rmsnorm"] = dict(N=N, C=C, eps=eps, x=flat(x), w=flat(w), out=flat(y), rstd=flat(rstd), dout=flat(dy), dx=flat(x.grad), dw=flat(w.grad))

# RoPE as in Hugging Face apply_rotary_pos_emb (rotate_half layout).
N, H, D, P, theta = 4, 2, 8, 16, 10000.0
inv = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=dt) / D))
table = torch.arange(P, dtype=dt)[:, None] * inv[None, :]
pos = [0, 3, 15, 7]
emb = torch.cat([table[pos], table[pos]], -1)[:, None, :]
cos, sin = emb.cos(), emb.sin()


def rotate_half(t):
    return torch.cat([-t[..., D // 2:], t[..., : D // 2]], -1)


x = leaf(N, H, D)
y = x * cos + rotate_half(x) * sin
dy = torch.randn_like(y)
y.backward(dy)
fx["rope"] = dict(N=N, H=H, D=D, P=P, pos=pos, cos=flat(table.cos()), sin=flat(table.sin()), x=flat(x), out=flat(y), dout=flat(dy), dx=flat(x.grad))


# Attention: eager softmax(q kᵀ·scale + mask) v with repeat_kv for GQA.
def attention(q, kc, vc, slot, qpos, klen, scale):
    # q [B,Tq,Hq,D]; kc, vc [S,Tmax,Hkv,D]
    B, Tq, Hq, D = q.shape
    Hkv = kc.shape[2]
    outs, lses = [], []
    for b in range(B):
        k = kc[slot[b]].repeat_interleave(Hq // Hkv, dim=1)  # [Tmax,Hq,D]
        v = vc[slot[b]].repeat_interleave(Hq // Hkv, dim=1)
        s = torch.einsum("ihd,jhd->hij", q[b], k) * scale  # [Hq,Tq,Tmax]
        i = torch.arange(Tq)[:, None] + qpos[b]
        j = torch.arange(k.shape[0])[None, :]
        mask = (j <= i) & (j < klen[b])
        s = s.masked_fill(~mask[None], float("-inf"))
        lses.append(torch.logsumexp(s, -1).permute(1, 0))  # [Tq,Hq]
        p = torch.softmax(s, -1)
        outs.append(torch.einsum("hij,jhd->ihd", p, v))
    return torch.stack(outs), torch.stack(lses)


att = []
for c in [
    dict(B=2, Tq=5, Hq=4, Hkv=2, D=6, S=2, Tmax=5, slot=[0, 1], qpos=[0, 0], klen=[5, 3], scale=0.0),
    dict(B=2, Tq=1, Hq=4, Hkv=1, D=4, S=3, Tmax=6, slot=[2, 0], qpos=[4, 1], klen=[5, 2], scale=0.0),
    dict(B=1, Tq=3, Hq=2, Hkv=2, D=5, S=2, Tmax=8, slot=[1], qpos=[2], klen=[5], scale=0.375),
]:
    q = leaf(c["B"], c["Tq"], c["Hq"], c["D"])
    k = leaf(c["S"], c["Tmax"], c["Hkv"], c["D"])
    v = leaf(c["S"], c["Tmax"], c["Hkv"], c["D"])
    scale = c["scale"] or 1 / math.sqrt(c["D"])
    o, lse = attention(q, k, v, c["slot"], c["qpos"], c["klen"], scale)
    do = torch.randn_like(o)
    o.backward(do)
    att.append(dict(c, q=flat(q), k=flat(k), v=flat(v), out=flat(o), lse=flat(lse), dout=flat(do), dq=flat(q.grad), dk=flat(k.grad), dv=flat(v.grad)))
fx["attention"] = att

# SwiGLU: silu(gate) * up.
n = 9
g, u = leaf(n, scale=4), leaf(n)
y = F.silu(g) * u
dy = torch.randn_like(y)
y.backward(dy)
fx["swiglu"] = dict(n=n, gate=flat(g), up=flat(u), out=flat(y), dout=flat(dy), dgate=flat(g.grad), dup=flat(u.grad))

# LogProbs: log_softmax + gather, logsumexp, entropy; rows with target -1.
N, V = 4, 11
logits = leaf(N, V, scale=3)
targets = [3, -1, 10, 0]
lsm = F.log_softmax(logits, -1)
tg = torch.tensor([max(t, 0) for t in targets])
keep = torch.tensor([t >= 0 for t in targets], dtype=dt)
lp = lsm.gather(1, tg[:, None])[:, 0] * keep
ent = -(lsm.exp() * lsm).sum(-1)
dlp = torch.randn(N, dtype=dt)
lp.backward(dlp)
fx["logprobs"] = dict(N=N, V=V, logits=flat(logits), targets=targets, lp=flat(lp), lse=flat(torch.logsumexp(logits, -1)), ent=flat(ent), dlp=flat(dlp), dlogits=flat(logits.grad))

# AdamW: torch.optim.AdamW over 5 steps with given gradients.
n = 6
p0 = torch.randn(n, dtype=dt)
param = p0.clone().requires_grad_()
# Hyper-parameters exact in float32 (the Go AdamWParams are float32).
hp = dict(lr=2**-7, betas=(0.875, 0.9375), eps=2**-26, weight_decay=0.125)
opt = torch.optim.AdamW([param], **hp)
grads, params, ms, vs = [], [], [], []
for step in range(5):
    g = torch.randn(n, dtype=dt)
    param.grad = g.clone()
    opt.step()
    st = opt.state[param]
    grads.append(flat(g)); params.append(flat(param)); ms.append(flat(st["exp_avg"])); vs.append(flat(st["exp_avg_sq"]))
fx["adamw"] = dict(n=n, lr=hp["lr"], beta1=0.875, beta2=0.9375, eps=hp["eps"], wd=hp["weight_decay"], p0=flat(p0), grads=grads, params=params, m=ms, v=vs)

# Llama-3 rope_scaling inverse frequencies and tables, computed in float32
# with the operations of Hugging Face's _compute_llama3_parameters and
# LlamaRotaryEmbedding.forward (Llama-3.2-1B: head_dim 64, theta 5e5).
D, theta = 64, 500000.0
factor, low, high, orig = 32.0, 1.0, 4.0, 8192
inv = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.int64).float() / D))
low_wavelen, high_wavelen = orig / low, orig / high
wavelen = 2 * math.pi / inv
inv_l = torch.where(wavelen > low_wavelen, inv / factor, inv)
smooth = (orig / wavelen - low) / (high - low)
smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
is_medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
inv_l = torch.where(is_medium, smoothed, inv_l)
pos = [0, 1, 1000, 8191, 20000]
freqs = inv_l[None, :].float() * torch.tensor(pos, dtype=torch.float32)[:, None]
fx["rope_llama3"] = dict(D=D, theta=theta, factor=factor, low=low, high=high, orig=orig, pos=pos,
                         inv_freq=flat(inv_l.double()), cos=flat(freqs.cos().double()), sin=flat(freqs.sin().double()))

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_ref.json"), "w") as f:
    json.dump(fx, f)
