#!/usr/bin/python3
"""PyTorch oracle for the RL objective (trainer/rl/loss.go), written
independently of the Go code from docs/contracts.md §5 and verl's formulas:

    /usr/bin/python3 trainer/rl/testdata/gen_objective.py > trainer/rl/testdata/objective.json

Two rollouts (prompts of 3 and 2 tokens, responses of 2 and 4 tokens), the
numbers of objFixture in math_test.go. For each loss_agg mode it writes
the loss and d loss / d logprob, d loss / d value at every position of the
full sequences (autograd), with clip eps 0.2/0.28, k3 KL coef 0.1, vf_coef
0.5, value clip 0.2, and L = 8 for seq-mean-token-sum-norm (divided by the
number of sequences too, as Dr.GRPO's code).
"""
import json
import torch

torch.set_default_dtype(torch.float64)

old_lp = [[-1, -2], [-0.5, -0.4, -3, -1]]
ref_lp = [[-1.2, -1.5], [-0.6, -0.4, -2, -1.1]]
adv = [[0.7, 2.1], [-1, -1, -3, -1]]
old_v = [[0.1, 0.3], [0, 0.2, 0.4, 0.9]]
ret = [[1, 1], [-1, -1, -1, -1]]
lp_full = [[0, -0.3, -0.2, -0.9, -2.5], [0, -0.1, -0.45, -0.3, -3.4, -1]]
val_full = [[0, 0.2, 0.15, 0.6, 9], [0, -0.1, 0.3, 0.35, 0.85, 9]]
start = [3, 2]
EPS_LO, EPS_HI, KL_COEF, VF_COEF, VCLIP, L = 0.2, 0.28, 0.1, 0.5, 0.2, 8


def f32(x):  # the Go side stores these as float32
    return torch.tensor(x, dtype=torch.float32).to(torch.float64)


def run(mode):
    lps = [f32(r).requires_grad_() for r in lp_full]
    vals = [f32(r).requires_grad_() for r in val_full]
    n = len(lps)
    total_tokens = sum(len(a) for a in adv)
    loss = 0
    for b in range(n):
        T = len(adv[b])
        lp = lps[b][start[b]:start[b] + T]
        v = vals[b][start[b] - 1:start[b] - 1 + T]
        A, old, ref = f32(adv[b]), f32(old_lp[b]), f32(ref_lp[b])
        x = torch.clamp(lp - old, -20, 20)
        rho = torch.exp(x)
        pg = torch.maximum(-A * rho, -A * torch.clamp(rho, 1 - EPS_LO, 1 + EPS_HI))
        d = torch.clamp(ref - lp, -20, 20)
        k3 = torch.clamp(torch.exp(d) - d - 1, -10, 10)
        ov, R = f32(old_v[b]), f32(ret[b])
        vc = torch.clamp(v, ov - VCLIP, ov + VCLIP)
        vf = 0.5 * torch.maximum((v - R) ** 2, (vc - R) ** 2)
        tok = pg + KL_COEF * k3 + VF_COEF * vf
        if mode == "token-mean":
            loss = loss + tok.sum() / total_tokens
        elif mode == "seq-mean-token-mean":
            loss = loss + tok.sum() / T / n
        else:
            loss = loss + tok.sum() / (n * L)
    loss.backward()
    return {"loss": loss.item(), "dlp": [g.grad.tolist() for g in lps], "dv": [g.grad.tolist() for g in vals]}


print(json.dumps({m: run(m) for m in ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"]}, indent=1))
