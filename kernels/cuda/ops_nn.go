package cuda

import "github.com/argrl/argrl/kernels"

// Shape legend: N rows, C channels, H heads, D head dim, V vocabulary.

func (be *Backend) Embedding(out, table kernels.Buffer, ids []int32, C int) {
	o := be.begin("Embedding")
	defer o.end()
	o.Dims("C", C)
	N := len(ids)
	op := o.out("out", out, N*C)
	t := o.buf("table", table, 0, kernels.Read)
	if o.Skip(N, C) || !o.IDs("ids", ids, t.n/C) {
		return
	}
	k := "embedding_fwd"
	if t.dt == kernels.BF16 {
		k = "embedding_fwd_bf16"
	}
	o.launch(k, grid1(int64(N*C)), block1, pArg(op), pArg(t.ptr()), pArg(o.ints(ids)), iArg(N), iArg(C))
}

func (be *Backend) EmbeddingBackward(dtable, dout kernels.Buffer, ids []int32, C int) {
	o := be.begin("EmbeddingBackward")
	defer o.end()
	o.Dims("C", C)
	N := len(ids)
	dp := o.in("dout", dout, N*C)
	d := o.buf("dtable", dtable, 0, kernels.Write)
	if o.Skip(C) {
		return
	}
	V := d.n / C
	if V > 0 && !o.check(be.dev.memset32(d.ptr(), 0, int64(V*C))) {
		return
	}
	if o.Skip(N) || !o.IDs("ids", ids, V) {
		return
	}
	dt := d.ptr()
	o.launch("embedding_bwd", grid1(int64(N*C)), block1, pArg(dt), pArg(dp), pArg(o.ints(ids)), iArg(N), iArg(C))
}

func (be *Backend) RMSNorm(out, rstd, x, w kernels.Buffer, N, C int, eps float32) {
	o := be.begin("RMSNorm")
	defer o.end()
	o.Dims("N, C", N, C)
	ob, rp := o.buf("out", out, N*C, kernels.WriteAny), o.out("rstd", rstd, N) // out F32 or BF16
	xp, wp := o.in("x", x, N*C), o.in("w", w, C)
	if o.Skip(N, C) {
		return
	}
	kernel := "rmsnorm_fwd"
	if ob.dt == kernels.BF16 {
		kernel = "rmsnorm_fwd_bf16"
	}
	o.launch(kernel, dim3{N, 1, 1}, rowBlock(C), pArg(ob.ptr()), pArg(rp), pArg(xp), pArg(wp), iArg(N), iArg(C), fArg(eps))
}

func (be *Backend) RMSNormBackward(dx, dw, dout, x, w, rstd kernels.Buffer, N, C int) {
	o := be.begin("RMSNormBackward")
	defer o.end()
	o.Dims("N, C", N, C)
	dxp, dwp := o.out("dx", dx, N*C), o.out("dw", dw, C)
	dop, xp, wp, rp := o.in("dout", dout, N*C), o.in("x", x, N*C), o.in("w", w, C), o.in("rstd", rstd, N)
	if o.Skip(C) {
		return
	}
	if N == 0 {
		o.check(be.dev.memset32(dwp, 0, int64(C)))
		return
	}
	o.launch("rmsnorm_bwd_dx", dim3{N, 1, 1}, rowBlock(C), pArg(dxp), pArg(dop), pArg(xp), pArg(wp), pArg(rp), iArg(N), iArg(C))
	cols := (C + 255) / 256
	R, P := rowChunks(N)
	if P == 1 {
		o.launch("rmsnorm_bwd_dw_partial", dim3{cols, 1, 1}, block1, pArg(dwp), pArg(dop), pArg(xp), pArg(rp), iArg(N), iArg(C), iArg(N))
		return
	}
	part := o.scratch(int64(P) * int64(C) * 4)
	o.launch("rmsnorm_bwd_dw_partial", dim3{cols, P, 1}, block1, pArg(part), pArg(dop), pArg(xp), pArg(rp), iArg(N), iArg(C), iArg(R))
	o.launch("sum_rows_partial", dim3{cols, 1, 1}, block1, pArg(dwp), pArg(part), iArg(P), iArg(C), iArg(P))
}

// rowChunks splits N rows into P chunks of R rows for two-pass column sums
// (P <= 65535, the grid's y limit).
func rowChunks(N int) (R, P int) {
	R = max(64, (N+65534)/65535)
	P = (N + R - 1) / R
	return R, P
}

func (be *Backend) RoPE(out, x, cos, sin kernels.Buffer, pos []int32, N, H, D int, inverse bool) {
	o := be.begin("RoPE")
	defer o.end()
	o.Dims("N, H, D", N, H, D)
	if D%2 != 0 {
		o.Failf("head dim D = %d is odd", D)
	}
	o.Side("pos", len(pos), N)
	op, xp := o.out("out", out, N*H*D), o.in("x", x, N*H*D)
	c, s := o.buf("cos", cos, 0, kernels.Read), o.buf("sin", sin, 0, kernels.Read)
	if o.Skip(N, H, D) {
		return
	}
	P := min(c.n, s.n) / (D / 2)
	if !o.IDs("pos", pos[:N], P) {
		return
	}
	cp, sp := o.in("cos", cos, P*D/2), o.in("sin", sin, P*D/2)
	o.launch("rope", grid1(int64(N*H*D/2)), block1, pArg(op), pArg(xp), pArg(cp), pArg(sp), pArg(o.ints(pos[:N])),
		iArg(N), iArg(H), iArg(D), bArg(inverse))
}

func (be *Backend) SwiGLU(out, gate, up kernels.Buffer, N, F, ld int) {
	o := be.begin("SwiGLU")
	defer o.end()
	o.Dims("N, F, ld", N, F, ld)
	o.Stride("ld", ld, F)
	span := kernels.StridedLen(N, F, ld)
	op, gp, up_ := o.out("out", out, N*F), o.in("gate", gate, span), o.in("up", up, span)
	if o.Skip(N, F) {
		return
	}
	o.launch("swiglu_fwd", rowsGrid(N, F), block1, pArg(op), pArg(gp), pArg(up_), iArg(N), iArg(F), lArg(int64(ld)))
}

func (be *Backend) SwiGLUBackward(dgate, dup, dout, gate, up kernels.Buffer, N, F, ld int) {
	o := be.begin("SwiGLUBackward")
	defer o.end()
	o.Dims("N, F, ld", N, F, ld)
	o.Stride("ld", ld, F)
	span := kernels.StridedLen(N, F, ld)
	dg, du := o.out("dgate", dgate, span), o.out("dup", dup, span)
	dp, gp, up_ := o.in("dout", dout, N*F), o.in("gate", gate, span), o.in("up", up, span)
	if o.Skip(N, F) {
		return
	}
	o.launch("swiglu_bwd", rowsGrid(N, F), block1, pArg(dg), pArg(du), pArg(dp), pArg(gp), pArg(up_),
		iArg(N), iArg(F), lArg(int64(ld)))
}

// rowsGrid is mlp.cu's grid over N rows of F columns: blocks of 256 over
// the columns (at most 8192), one block row per row (at most 65535; both
// loops stride).
func rowsGrid(N, F int) dim3 {
	return dim3{grid1(int64(F)).x, min(max(N, 1), 65535), 1}
}

func (be *Backend) LogProbs(lp, lse, ent, logits kernels.Buffer, targets []int32, N, V int) {
	o := be.begin("LogProbs")
	defer o.end()
	o.Vocab(N, V)
	o.Side("targets", len(targets), N)
	lpp, lsep := o.out("lp", lp, N), o.out("lse", lse, N)
	var entp devPtr
	if ent != nil {
		entp = o.out("ent", ent, N)
	}
	xp, kernel := o.logitsIn(logits, N*V, "logprobs_fwd")
	if o.Skip(N) || !o.Targets(targets[:N], V) {
		return
	}
	o.logProbsRows(lpp, lsep, entp, xp, o.ints(targets[:N]), kernel, N, V)
}

// logProbsRows launches the log-prob kernels over N rows of V logits at xp
// with device targets tp (LogProbs, and DrawRows on the ids it drew).
func (o *opCtx) logProbsRows(lpp, lsep, entp, xp, tp devPtr, kernel string, N, V int) {
	if V <= lpChunk {
		o.launch(kernel, dim3{N, 1, 1}, rowBlock(V), pArg(lpp), pArg(lsep), pArg(entp), pArg(xp),
			pArg(tp), iArg(N), iArg(V), bArg(entp != 0))
		return
	}
	// vocabulary chunks: one block per (chunk, row), then one warp per row
	suffix := kernel[len("logprobs_fwd"):] // "" or "_bf16"
	nc := (V + lpChunk - 1) / lpChunk
	part := o.scratch(int64(N) * int64(nc) * 3 * 4)
	o.launch("logprobs_chunk"+suffix, dim3{nc, min(N, 65535), 1}, dim3{lpChunkThreads, 1, 1}, pArg(part), pArg(xp),
		iArg(N), iArg(V), iArg(nc))
	o.launch("logprobs_combine"+suffix, dim3{N, 1, 1}, dim3{32, 1, 1}, pArg(lpp), pArg(lsep), pArg(entp), pArg(part),
		pArg(xp), pArg(tp), iArg(N), iArg(V), iArg(nc), bArg(entp != 0))
}

// lpChunk and lpChunkThreads are logprobs.cu's LP_CHUNK and
// LP_CHUNK_THREADS: rows longer than lpChunk are read in chunks of it.
const (
	lpChunk        = 4096
	lpChunkThreads = 256
)

func (be *Backend) LogProbsBackward(dlogits, dlp, logits, lse kernels.Buffer, targets []int32, N, V int) {
	o := be.begin("LogProbsBackward")
	defer o.end()
	o.Vocab(N, V)
	o.Side("targets", len(targets), N)
	dp := o.out("dlogits", dlogits, N*V)
	gp, lp := o.in("dlp", dlp, N), o.in("lse", lse, N)
	xp, kernel := o.logitsIn(logits, N*V, "logprobs_bwd")
	if o.Skip(N) || !o.Targets(targets[:N], V) {
		return
	}
	o.launch(kernel, grid1(int64(N)*int64(V)), block1, pArg(dp), pArg(gp), pArg(xp), pArg(lp),
		pArg(o.ints(targets[:N])), iArg(N), iArg(V))
}

// logitsIn returns the logits' address and the kernel that reads them: the
// _bf16 twin for BF16 logits (read in place, no N×V f32 copy).
func (o *opCtx) logitsIn(logits kernels.Buffer, n int, kernel string) (devPtr, string) {
	cb := o.buf("logits", logits, n, kernels.Read)
	if cb == nil || o.Bad {
		return 0, kernel
	}
	if cb.dt == kernels.BF16 {
		return cb.ptr(), kernel + "_bf16"
	}
	return cb.ptr(), kernel
}
