package kerneltest

import (
	"fmt"
	"math"
	"slices"

	"github.com/argrl/argrl/kernels"
)

// testRMSNorm: forward (out, rstd), in place, backward (dx, dw) against the
// reference, and the reference backward against finite differences.
func testRMSNorm(h *harness) {
	t := h.t
	// rows of one block of 32 threads up to 1024 (the CUDA row kernels'
	// blocks: C rounded up to a warp, at most 1024) and longer rows
	for _, s := range []struct{ N, C int }{{5, 7}, {3, 64}, {17, 13}, {4, 3}, {3, 33}, {2, 1000}, {3, 2049}} {
		N, C := s.N, s.C
		eps := float32(1e-6)
		x, w, dout := h.vec(N*C, 2), h.vec(C, 1.5), h.vec(N*C, 1)
		out, rstd := h.zeros(N*C), h.zeros(N)
		xb, wb := h.f32(x), h.f32(w)
		h.b.RMSNorm(out, rstd, xb, wb, N, C, eps)
		wo, wr := make([]float64, N*C), make([]float64, N)
		kernels.RefRMSNorm(wo, wr, x, w, N, C, float64(eps))
		what := fmt.Sprintf("RMSNorm N=%d C=%d", N, C)
		approx(t, what+" out", h.down(out), wo, rtolReduce, atolReduce)
		approx(t, what+" rstd", h.down(rstd), wr, rtolReduce, atolReduce)

		dx, dw := h.zeros(N*C), h.f32(h.vec(C, 3))
		h.b.RMSNormBackward(dx, dw, h.f32(dout), xb, wb, rstd, N, C)
		wdx, wdw := make([]float64, N*C), make([]float64, C)
		kernels.RefRMSNormBackward(wdx, wdw, dout, x, w, wr, N, C)
		approx(t, what+" dx", h.down(dx), wdx, rtolReduce, atolReduce)
		approx(t, what+" dw", h.down(dw), wdw, rtolReduce, atolReduce)

		ip := h.f32(x)
		h.b.RMSNorm(ip, rstd, ip, wb, N, C, eps)
		approx(t, what+" in place", h.down(ip), wo, rtolReduce, atolReduce)

		// a BF16 out holds exactly the F32 result rounded (Convert)
		ob, cv := h.b.Alloc(kernels.BF16, N*C), h.b.Alloc(kernels.BF16, N*C)
		h.b.RMSNorm(ob, h.zeros(N), xb, wb, N, C, eps)
		h.b.Convert(cv, out)
		if !slices.Equal(h.down(ob), h.down(cv)) {
			t.Errorf("%s: a bf16 out differs from the f32 out converted to bf16", what)
		}

		o, r := make([]float64, N*C), make([]float64, N)
		fdCheck(t, what+" reference backward", func() []float64 {
			kernels.RefRMSNorm(o, r, x, w, N, C, float64(eps))
			return o
		}, dout, [][]float64{x, w}, [][]float64{wdx, wdw})
	}
}

// testRoPE: tables with plain theta and with scaled frequencies, forward and
// inverse against the reference, in place, inverse∘forward = identity, and
// the inverse as the backward (finite differences on the reference).
func testRoPE(h *harness) {
	t := h.t
	N, H, D, P := 6, 3, 8, 40
	pos := []int32{0, 1, 7, 39, 12, 3}
	plain := kernels.RopeInvFreq(D, 10000)
	scaled := append([]float32(nil), plain...) // long wavelengths slowed, as rope_scaling does
	for i := 1; i < len(scaled); i++ {
		scaled[i] /= 8
	}
	for _, invFreq := range [][]float32{plain, scaled} {
		cos32, sin32 := kernels.RopeTables(invFreq, P)
		cos, sin := make([]float64, len(cos32)), make([]float64, len(sin32))
		for i := range cos32 {
			cos[i], sin[i] = float64(cos32[i]), float64(sin32[i])
		}
		cb, sb := h.f32(cos), h.f32(sin)
		x, dout := h.vec(N*H*D, 1), h.vec(N*H*D, 1)
		for _, inv := range []bool{false, true} {
			what := fmt.Sprintf("RoPE scaled=%v inverse=%v", &invFreq[0] == &scaled[0], inv)
			out := h.zeros(N * H * D)
			h.b.RoPE(out, h.f32(x), cb, sb, pos, N, H, D, inv)
			want := make([]float64, N*H*D)
			kernels.RefRoPE(want, x, cos, sin, pos, N, H, D, inv)
			approx(t, what, h.down(out), want, rtolElem, atolElem)
			ip := h.f32(x)
			h.b.RoPE(ip, ip, cb, sb, pos, N, H, D, inv)
			approx(t, what+" in place", h.down(ip), want, rtolElem, atolElem)
		}
		rt := h.f32(x)
		h.b.RoPE(rt, rt, cb, sb, pos, N, H, D, false)
		h.b.RoPE(rt, rt, cb, sb, pos, N, H, D, true)
		approx(t, "RoPE inverse∘forward", h.down(rt), x, 1e-5, 1e-5)

		dx := make([]float64, N*H*D)
		kernels.RefRoPE(dx, dout, cos, sin, pos, N, H, D, true)
		o := make([]float64, N*H*D)
		fdCheck(t, "RoPE backward = inverse", func() []float64 {
			kernels.RefRoPE(o, x, cos, sin, pos, N, H, D, false)
			return o
		}, dout, [][]float64{x}, [][]float64{dx})
	}
	testRopeTables(t)
}

// testSwiGLU: forward and backward against the reference over a wide range
// of gate values, dense (ld = F) and in the fused gate/up layout (ld = 2F,
// up a view of the same buffer; odd N and F), the columns a strided
// backward must not write left as they were, a stride below the width
// refused, and the reference backward against finite differences.
func testSwiGLU(h *harness) {
	t := h.t
	n := 2053
	g, u, dout := h.vec(n, 8), h.vec(n, 2), h.vec(n, 1)
	out := h.zeros(n)
	gb, ub := h.f32(g), h.f32(u)
	h.b.SwiGLU(out, gb, ub, 1, n, n)
	want := make([]float64, n)
	kernels.RefSwiGLU(want, g, u, 1, n, n)
	approx(t, "SwiGLU", h.down(out), want, rtolElem*4, atolElem)

	dg, du := h.zeros(n), h.zeros(n)
	h.b.SwiGLUBackward(dg, du, h.f32(dout), gb, ub, 1, n, n)
	wdg, wdu := make([]float64, n), make([]float64, n)
	kernels.RefSwiGLUBackward(wdg, wdu, dout, g, u, 1, n, n)
	approx(t, "SwiGLU dgate", h.down(dg), wdg, rtolElem*4, atolElem)
	approx(t, "SwiGLU dup", h.down(du), wdu, rtolElem*4, atolElem)

	for _, sh := range [][2]int{{1, 1}, {3, 7}, {17, 33}, {5, 300}} {
		N, F := sh[0], sh[1]
		ld := 2 * F
		gu, d := h.vec(N*ld, 8), h.vec(N*F, 1)
		gub := h.f32(gu)
		name := fmt.Sprintf("SwiGLU fused layout N=%d F=%d", N, F)
		o := h.zeros(N * F)
		h.b.SwiGLU(o, gub, h.b.View(gub, F, N*ld-F), N, F, ld)
		w := make([]float64, N*F)
		kernels.RefSwiGLU(w, gu, gu[F:], N, F, ld)
		approx(t, name, h.down(o), w, rtolElem*4, atolElem)
		// the same rows as separate dense buffers give the same bits
		gs, us := make([]float64, N*F), make([]float64, N*F)
		for r := range N {
			copy(gs[r*F:r*F+F], gu[r*ld:r*ld+F])
			copy(us[r*F:r*F+F], gu[r*ld+F:r*ld+ld])
		}
		od := h.zeros(N * F)
		h.b.SwiGLU(od, h.f32(gs), h.f32(us), N, F, F)
		if !slices.Equal(h.bits(o), h.bits(od)) {
			t.Errorf("%s: differs from the same rows as dense buffers", name)
		}

		dgu := h.f32(filled(N*ld, 7)) // sentinel, fully overwritten
		h.b.SwiGLUBackward(dgu, h.b.View(dgu, F, N*ld-F), h.f32(d), gub, h.b.View(gub, F, N*ld-F), N, F, ld)
		wg, wu := make([]float64, N*ld), make([]float64, N*ld-F)
		kernels.RefSwiGLUBackward(wg, wu, d, gu, gu[F:], N, F, ld)
		for r := range N { // the up half of wg is wu's
			copy(wg[r*ld+F:r*ld+ld], wu[r*ld:r*ld+F])
		}
		approx(t, name+" backward", h.down(dgu), wg, rtolElem*4, atolElem)

		// ld = 3F: the columns between rows are left as they were
		wide := h.f32(filled(N*3*F, 7))
		h.b.SwiGLUBackward(wide, h.b.View(wide, F, N*3*F-F), h.f32(d), h.f32(h.vec(N*3*F, 8)), h.f32(h.vec(N*3*F, 2)), N, F, 3*F)
		got := h.down(wide)
		for r := range N {
			for c := 2 * F; c < 3*F; c++ {
				if got[r*3*F+c] != 7 {
					t.Errorf("%s: SwiGLUBackward at ld = 3F wrote column %d of row %d (%v)", name, c, r, got[r*3*F+c])
					return
				}
			}
		}
	}
	h.b.SwiGLU(h.zeros(6), h.f32(h.vec(6, 1)), h.f32(h.vec(6, 1)), 2, 3, 2)
	h.wantErr("SwiGLU with ld < F", "stride")

	m := 41
	g2, u2, d2 := h.vec(m, 6), h.vec(m, 2), h.vec(m, 1)
	a, b := make([]float64, m), make([]float64, m)
	kernels.RefSwiGLUBackward(a, b, d2, g2, u2, 1, m, m)
	o := make([]float64, m)
	fdCheck(t, "SwiGLU reference backward", func() []float64 {
		kernels.RefSwiGLU(o, g2, u2, 1, m, m)
		return o
	}, d2, [][]float64{g2, u2}, [][]float64{a, b})
}

// filled is n copies of v.
func filled(n int, v float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// testLogProbs: lp, lse and entropy against the reference (rows with
// target −1, large logits, a row with −Inf logits), without entropy, the
// backward, and the reference backward against finite differences.
func testLogProbs(h *harness) {
	t := h.t
	for _, s := range []struct {
		N, V  int
		scale float64
	}{{6, 37, 3}, {4, 1000, 30}, {3, 5, 0.1},
		// a real vocabulary's rows are read in chunks by some backends (CUDA:
		// 4096 logits): one past a chunk, exactly two, several and a partial one
		{3, 4097, 5}, {3, 8192, 10}, {4, 10007, 20}} {
		N, V := s.N, s.V
		x := h.vec(N*V, s.scale)
		targets := make([]int32, N)
		for n := range targets {
			targets[n] = int32(h.r.IntN(V))
		}
		targets[1] = -1
		x[2*V+1] = math.Inf(-1) // a masked logit
		if V > 4096 {           // a whole chunk masked, and the target in the last chunk
			for v := 0; v < 4096; v++ {
				x[v] = math.Inf(-1)
			}
			targets[0] = int32(V - 1)
		}
		what := fmt.Sprintf("LogProbs N=%d V=%d", N, V)
		lp, lse, ent := h.zeros(N), h.zeros(N), h.zeros(N)
		xb := h.f32(x)
		h.b.LogProbs(lp, lse, ent, xb, targets, N, V)
		wlp, wlse, went := make([]float64, N), make([]float64, N), make([]float64, N)
		kernels.RefLogProbs(wlp, wlse, went, x, targets, N, V)
		approx(t, what+" lp", h.down(lp), wlp, rtolReduce, atolReduce)
		approx(t, what+" lse", h.down(lse), wlse, rtolReduce, atolReduce)
		approx(t, what+" entropy", h.down(ent), went, rtolReduce, atolReduce)
		lp2 := h.zeros(N)
		h.b.LogProbs(lp2, lse, nil, xb, targets, N, V)
		approx(t, what+" lp without entropy", h.down(lp2), wlp, rtolReduce, atolReduce)
		// a row's results do not depend on the rows beside it (decoding
		// scores a few rows, training many: they must agree bit for bit)
		all := [][]float64{h.down(lp), h.down(lse), h.down(ent)}
		for n := range N {
			one := []kernels.Buffer{h.zeros(1), h.zeros(1), h.zeros(1)}
			h.b.LogProbs(one[0], one[1], one[2], h.b.View(xb, n*V, V), targets[n:n+1], 1, V)
			for i, b := range one {
				if g := h.down(b)[0]; math.Float32bits(float32(g)) != math.Float32bits(float32(all[i][n])) {
					t.Errorf("%s: row %d alone gives %v = %v, among %d rows %v", what, n, []string{"lp", "lse", "ent"}[i], g, N, all[i][n])
				}
			}
		}

		dlp := h.vec(N, 1)
		dx := h.f32(h.vec(N*V, 1)) // garbage: must be overwritten
		h.b.LogProbsBackward(dx, h.f32(dlp), xb, lse, targets, N, V)
		wdx := make([]float64, N*V)
		kernels.RefLogProbsBackward(wdx, dlp, x, wlse, targets, N, V)
		approx(t, what+" backward", h.down(dx), wdx, rtolReduce, atolReduce)

		// bf16 logits (the bf16 stash): the same on the rounded values
		xh, xr := h.up(x, kernels.BF16)
		kernels.RefLogProbs(wlp, wlse, went, xr, targets, N, V)
		h.b.LogProbs(lp, lse, ent, xh, targets, N, V)
		approx(t, what+" bf16 logits lp", h.down(lp), wlp, rtolReduce, atolReduce)
		approx(t, what+" bf16 logits entropy", h.down(ent), went, rtolReduce, atolReduce)
		kernels.RefLogProbsBackward(wdx, dlp, xr, wlse, targets, N, V)
		h.b.LogProbsBackward(dx, h.f32(dlp), xh, lse, targets, N, V)
		approx(t, what+" bf16 logits backward", h.down(dx), wdx, rtolReduce, atolReduce)
	}
	N, V := 4, 9
	x := h.vec(N*V, 2)
	targets := []int32{3, -1, 8, 0}
	dlp := h.vec(N, 1)
	lp, lse := make([]float64, N), make([]float64, N)
	kernels.RefLogProbs(lp, lse, nil, x, targets, N, V)
	dx := make([]float64, N*V)
	kernels.RefLogProbsBackward(dx, dlp, x, lse, targets, N, V)
	fdCheck(t, "LogProbs reference backward", func() []float64 {
		kernels.RefLogProbs(lp, lse, nil, x, targets, N, V)
		return lp
	}, dlp, [][]float64{x}, [][]float64{dx})
}
