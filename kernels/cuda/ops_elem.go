package cuda

import (
	"math"

	"github.com/argrl/argrl/kernels"
)

func (be *Backend) AXPBY(out, a, b kernels.Buffer, alpha, beta float32, n int) {
	o := be.begin("AXPBY")
	defer o.end()
	o.Dims("n", n)
	op, ap := o.out("out", out, n), o.in("a", a, n)
	var bp devPtr
	if beta != 0 {
		bp = o.in("b", b, n)
	}
	if o.Skip(n) {
		return
	}
	o.launch("axpby", grid1(int64(n)), block1, pArg(op), pArg(ap), pArg(bp), fArg(alpha), fArg(beta), lArg(int64(n)))
}

func (be *Backend) Mul(out, a, b kernels.Buffer, n int) {
	o := be.begin("Mul")
	defer o.end()
	o.Dims("n", n)
	op, ap, bp := o.out("out", out, n), o.in("a", a, n), o.in("b", b, n)
	if o.Skip(n) {
		return
	}
	o.launch("mul", grid1(int64(n)), block1, pArg(op), pArg(ap), pArg(bp), lArg(int64(n)))
}

func (be *Backend) AddBias(out, x, bias kernels.Buffer, N, C int) {
	o := be.begin("AddBias")
	defer o.end()
	o.Dims("N, C", N, C)
	op, xp, bp := o.out("out", out, N*C), o.in("x", x, N*C), o.in("bias", bias, C)
	if o.Skip(N, C) {
		return
	}
	o.launch("add_bias", grid1(int64(N*C)), block1, pArg(op), pArg(xp), pArg(bp), iArg(N), iArg(C))
}

func (be *Backend) SumRows(out, x kernels.Buffer, N, C int) {
	o := be.begin("SumRows")
	defer o.end()
	o.Dims("N, C", N, C)
	op, xp := o.out("out", out, C), o.in("x", x, N*C)
	if o.Skip(C) {
		return
	}
	if N == 0 {
		o.check(be.dev.memset32(op, 0, int64(C)))
		return
	}
	cols := (C + 255) / 256
	R, P := rowChunks(N)
	if P == 1 {
		o.launch("sum_rows_partial", dim3{cols, 1, 1}, block1, pArg(op), pArg(xp), iArg(N), iArg(C), iArg(N))
		return
	}
	part := o.scratch(int64(P) * int64(C) * 4)
	o.launch("sum_rows_partial", dim3{cols, P, 1}, block1, pArg(part), pArg(xp), iArg(N), iArg(C), iArg(R))
	o.launch("sum_rows_partial", dim3{cols, 1, 1}, block1, pArg(op), pArg(part), iArg(P), iArg(C), iArg(P))
}

func (be *Backend) Dot(out, a, b kernels.Buffer, n int) {
	o := be.begin("Dot")
	defer o.end()
	o.Dims("n", n)
	op, ap, bp := o.out("out", out, 1), o.in("a", a, n), o.in("b", b, n)
	if o.Bad {
		return
	}
	if n == 0 {
		o.check(be.dev.memset32(op, 0, 1))
		return
	}
	P := min(grid1(int64(n)).x, 1024)
	part := o.scratch(int64(P) * 4)
	o.launch("dot_partial", dim3{P, 1, 1}, block1, pArg(part), pArg(ap), pArg(bp), lArg(int64(n)))
	o.launch("reduce_sum", dim3{1, 1, 1}, rowBlock(P), pArg(op), pArg(part), iArg(P))
}

func (be *Backend) Dropout(out, x kernels.Buffer, n int, p float32, seed uint64) {
	o := be.begin("Dropout")
	defer o.end()
	o.Dims("n", n)
	if !(p >= 0 && p <= 1) {
		o.Failf("p = %v outside [0, 1]", p)
	}
	op, xp := o.out("out", out, n), o.in("x", x, n)
	if o.Skip(n) {
		return
	}
	o.launch("dropout", grid1(int64(n)), block1, pArg(op), pArg(xp), lArg(int64(n)), fArg(p), uArg(seed))
}

func (be *Backend) AdamW(param, grad, m, v kernels.Buffer, n int, p kernels.AdamWParams) {
	o := be.begin("AdamW")
	defer o.end()
	o.Dims("n", n)
	if p.Step < 1 {
		o.Failf("Step = %d, must be ≥ 1", p.Step)
	}
	pp, gp, mp, vp := o.out("param", param, n), o.in("grad", grad, n), o.out("m", m, n), o.out("v", v, n)
	if o.Skip(n) {
		return
	}
	bc1 := float32(1 - math.Pow(float64(p.Beta1), float64(p.Step)))
	bc2 := float32(1 - math.Pow(float64(p.Beta2), float64(p.Step)))
	o.launch("adamw", grid1(int64(n)), block1, pArg(pp), pArg(gp), pArg(mp), pArg(vp), lArg(int64(n)),
		fArg(p.LR), fArg(p.Beta1), fArg(p.Beta2), fArg(p.Eps), fArg(p.WeightDecay), fArg(bc1), fArg(bc2))
}

// Sample runs sample.cu's radix-select sampler, one block per row; only the
// N uniforms go up and the N ids come back.
func (be *Backend) Sample(ids []int32, logits kernels.Buffer, u []float32, N, V int, p kernels.SampleParams) {
	o := be.begin("Sample")
	defer o.end()
	o.Sample(len(ids), u, N, V, p)
	xp := o.in("logits", logits, N*V)
	if o.Skip(N) {
		return
	}
	idp := o.scratch(int64(N) * 4)
	o.sampleRows(idp, xp, u, N, V, p)
	if !o.Bad {
		o.check(be.dev.dtoh(i32bytes(ids[:N]), idp))
	}
}

// sampleRows uploads the N uniforms and launches sample_rows into the
// device ids idp (Sample and DrawRows).
func (o *opCtx) sampleRows(idp, xp devPtr, u []float32, N, V int, p kernels.SampleParams) {
	up := o.scratch(int64(N) * 4)
	if o.Bad {
		return
	}
	o.check(o.be.dev.htod(up, f32bytes(u[:N])))
	invT := float32(0)
	if p.Temperature > 0 {
		invT = 1 / p.Temperature
	}
	o.launch("sample_rows", dim3{N, 1, 1}, rowBlock(V), pArg(idp), pArg(xp), pArg(up), iArg(N), iArg(V), fArg(invT),
		bArg(p.Temperature == 0), iArg(p.TopK), fArg(p.TopP))
}
