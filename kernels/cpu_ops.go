package kernels

import (
	"math"
	"sync"

	"github.com/argrl/argrl/kernels/internal/vec"
)

// Row- and element-parallel ops of the CPU backend. Grain sizes are element
// counts below which a goroutine is not worth starting.
const (
	grainElems = 1 << 15
)

// rowGrain is the number of rows of width C per goroutine chunk.
func rowGrain(C int) int { return max(1, grainElems/max(C, 1)) }

// Embedding: out[n,c] = table[ids[n],c]; table [V,C] F32 or BF16, out [N,C].
func (c *cpuBackend) Embedding(out, table Buffer, ids []int32, C int) {
	k := c.check("Embedding")
	k.Dims("C", C)
	N := len(ids)
	o := k.f32("out", out, N*C)
	t := k.buf("table", table, 0, Read)
	if k.Skip(N, C) || !k.IDs("ids", ids, t.n/C) {
		return
	}
	c.parallelFor(N, rowGrain(C), func(lo, hi int) {
		for n := lo; n < hi; n++ {
			row := t.off + int(ids[n])*C
			dst := o[n*C : n*C+C]
			if t.dt == F32 {
				copy(dst, t.st.f[row:row+C])
				continue
			}
			for i, h := range t.st.h[row : row+C] {
				dst[i] = Float32FromBF16(h)
			}
		}
	})
}

// EmbeddingBackward: dtable = 0; dtable[ids[n],c] += dout[n,c]. Parallel
// over column blocks, so no two goroutines touch the same element.
func (c *cpuBackend) EmbeddingBackward(dtable, dout Buffer, ids []int32, C int) {
	k := c.check("EmbeddingBackward")
	k.Dims("C", C)
	N := len(ids)
	d := k.in("dout", dout, N*C)
	t := k.buf("dtable", dtable, 0, Write)
	if k.Skip(C) {
		return
	}
	V := t.n / C
	dt := t.st.f[t.off : t.off+V*C]
	clear(dt)
	if k.Skip(N) || !k.IDs("ids", ids, V) {
		return
	}
	c.parallelFor(C, 64, func(lo, hi int) {
		for n, id := range ids {
			dst := dt[int(id)*C+lo : int(id)*C+hi]
			src := d[n*C+lo : n*C+hi]
			for i, x := range src {
				dst[i] += x
			}
		}
	})
}

// RMSNorm: rstd[n] = 1/sqrt(mean_c x² + eps); out = x·rstd·w. Parallel rows.
func (c *cpuBackend) RMSNorm(out, rstd, x, w Buffer, N, C int, eps float32) {
	k := c.check("RMSNorm")
	k.Dims("N,C", N, C)
	ob := k.buf("out", out, N*C, WriteAny) // F32, or BF16 (rounded)
	r := k.f32("rstd", rstd, N)
	xs := k.in("x", x, N*C)
	ws := k.in("w", w, C)
	if k.Skip(N, C) {
		return
	}
	c.parallelFor(N, rowGrain(C), func(lo, hi int) {
		for n := lo; n < hi; n++ {
			xr := xs[n*C : n*C+C]
			var ss float64
			for _, v := range xr {
				ss += float64(v) * float64(v)
			}
			rs := float32(1 / math.Sqrt(ss/float64(C)+float64(eps)))
			r[n] = rs
			if ob.dt == BF16 {
				oh := ob.st.h[ob.off+n*C : ob.off+n*C+C]
				for i, v := range xr {
					oh[i] = BF16FromFloat32(v * rs * ws[i])
				}
				continue
			}
			or := ob.st.f[ob.off+n*C : ob.off+n*C+C]
			for i, v := range xr {
				or[i] = v * rs * ws[i]
			}
		}
	})
}

// RMSNormBackward: dx = rstd·w·dout − x·rstd³·(Σ_c dout·w·x)/C;
// dw = Σ_n dout·x·rstd (per-goroutine partial sums, then reduced).
func (c *cpuBackend) RMSNormBackward(dx, dw, dout, x, w, rstd Buffer, N, C int) {
	k := c.check("RMSNormBackward")
	k.Dims("N,C", N, C)
	dxs := k.f32("dx", dx, N*C)
	dws := k.f32("dw", dw, C)
	ds := k.in("dout", dout, N*C)
	xs := k.in("x", x, N*C)
	ws := k.in("w", w, C)
	rs := k.in("rstd", rstd, N)
	if k.Skip(C) { // N = 0: dw = 0 below
		return
	}
	var parts [][]float64
	var mu sync.Mutex
	c.parallelFor(N, rowGrain(C), func(lo, hi int) {
		acc := make([]float64, C)
		for n := lo; n < hi; n++ {
			xr, dr, dxr := xs[n*C:n*C+C], ds[n*C:n*C+C], dxs[n*C:n*C+C]
			r := rs[n]
			var dot float64
			for i, v := range xr {
				dot += float64(dr[i]) * float64(ws[i]) * float64(v)
			}
			f := float32(dot / float64(C) * float64(r) * float64(r) * float64(r))
			for i, v := range xr {
				dxr[i] = r*ws[i]*dr[i] - v*f
				acc[i] += float64(dr[i]) * float64(v) * float64(r)
			}
		}
		mu.Lock()
		parts = append(parts, acc)
		mu.Unlock()
	})
	for i := range dws {
		s := 0.0
		for _, p := range parts {
			s += p[i]
		}
		dws[i] = float32(s)
	}
}

// RoPE: rotate-half rotation of x [N,H,D] by the tables' angles at pos[n].
func (c *cpuBackend) RoPE(out, x, cos, sin Buffer, pos []int32, N, H, D int, inverse bool) {
	k := c.check("RoPE")
	k.Dims("N,H,D", N, H, D)
	if D%2 != 0 {
		k.Failf("head dim D = %d is odd", D)
	}
	k.Side("pos", len(pos), N)
	o := k.f32("out", out, N*H*D)
	xs := k.in("x", x, N*H*D)
	cb := k.buf("cos", cos, 0, Read)
	sb := k.buf("sin", sin, 0, Read)
	if k.Skip(N, H, D) {
		return
	}
	h2 := D / 2
	P := min(cb.n, sb.n) / h2
	if !k.IDs("pos", pos[:N], P) {
		return
	}
	co := k.in("cos", cos, P*h2)
	si := k.in("sin", sin, P*h2)
	if k.Bad {
		return
	}
	c.parallelFor(N, rowGrain(H*D), func(lo, hi int) {
		for n := lo; n < hi; n++ {
			cr, sr := co[int(pos[n])*h2:][:h2], si[int(pos[n])*h2:][:h2]
			for h := 0; h < H; h++ {
				base := (n*H + h) * D
				x0, x1 := xs[base:base+h2], xs[base+h2:base+D]
				o0, o1 := o[base:base+h2], o[base+h2:base+D]
				if inverse {
					for i := range h2 {
						a, b := x0[i], x1[i]
						o0[i] = a*cr[i] + b*sr[i]
						o1[i] = b*cr[i] - a*sr[i]
					}
				} else {
					for i := range h2 {
						a, b := x0[i], x1[i]
						o0[i] = a*cr[i] - b*sr[i]
						o1[i] = b*cr[i] + a*sr[i]
					}
				}
			}
		}
	})
}

// KVWrite copies x [B,T,Hkv,D] into cache [S,Tmax,Hkv,D] at (slot[b], pos[b]+t).
func (c *cpuBackend) KVWrite(cache, x Buffer, slot, pos []int32, B, T, Hkv, D, Tmax int) {
	k := c.check("KVWrite")
	k.Dims("B,T,Hkv,D,Tmax", B, T, Hkv, D, Tmax)
	k.Side("slot", len(slot), B)
	k.Side("pos", len(pos), B)
	xs := k.in("x", x, B*T*Hkv*D)
	cb := k.buf("cache", cache, 0, Write)
	if k.Skip(B, T, Hkv, D) {
		return
	}
	row := Tmax * Hkv * D
	S := 0
	if row > 0 {
		S = cb.n / row
	}
	if !k.KVRows(slot[:B], pos[:B], T, S, Tmax) {
		return
	}
	cs := cb.st.f[cb.off : cb.off+S*row]
	w := T * Hkv * D
	for b := 0; b < B; b++ {
		dst := (int(slot[b])*Tmax + int(pos[b])) * Hkv * D
		copy(cs[dst:dst+w], xs[b*w:b*w+w])
	}
}

// KVScatter copies x [N,Hkv,D] row n into the paged cache [S,Tmax,Hkv,D]
// at (page[n], off[n]).
func (c *cpuBackend) KVScatter(cache, x Buffer, page, off []int32, N, Hkv, D, Tmax int) {
	k := c.check("KVScatter")
	k.Dims("N,Hkv,D,Tmax", N, Hkv, D, Tmax)
	k.Side("page", len(page), N)
	k.Side("off", len(off), N)
	xs := k.in("x", x, N*Hkv*D)
	cb := k.buf("cache", cache, 0, Write)
	if k.Skip(N, Hkv, D) {
		return
	}
	row := Tmax * Hkv * D
	S := 0
	if row > 0 {
		S = cb.n / row
	}
	if !k.KVPages(page[:N], off[:N], S, Tmax) {
		return
	}
	cs := cb.st.f[cb.off : cb.off+S*row]
	w := Hkv * D
	for n := 0; n < N; n++ {
		dst := (int(page[n])*Tmax + int(off[n])) * w
		copy(cs[dst:dst+w], xs[n*w:n*w+w])
	}
}

// SwiGLU: out[r,f] = silu(gate[r·ld+f])·up[r·ld+f]; out [N,F] dense.
func (c *cpuBackend) SwiGLU(out, gate, up Buffer, N, F, ld int) {
	k := c.check("SwiGLU")
	k.Dims("N, F, ld", N, F, ld)
	k.Stride("ld", ld, F)
	span := StridedLen(N, F, ld)
	o := k.f32("out", out, N*F)
	g := k.in("gate", gate, span)
	u := k.in("up", up, span)
	if k.Skip(N, F) {
		return
	}
	if ld == F { // dense: one elementwise range
		n := N * F
		c.parallelFor(n, grainElems/4, func(lo, hi int) {
			vec.SwiGLU(o[lo:hi], g[lo:hi], u[lo:hi]) // x/(1+e^−x)·u
		})
		return
	}
	c.parallelFor(N, max(1, grainElems/4/F), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			s := r * ld
			vec.SwiGLU(o[r*F:r*F+F], g[s:s+F], u[s:s+F])
		}
	})
}

// SwiGLUBackward: dgate = dout·up·s·(1+g(1−s)), dup = dout·g·s, s = σ(g),
// dgate and dup at row stride ld.
func (c *cpuBackend) SwiGLUBackward(dgate, dup, dout, gate, up Buffer, N, F, ld int) {
	k := c.check("SwiGLUBackward")
	k.Dims("N, F, ld", N, F, ld)
	k.Stride("ld", ld, F)
	span := StridedLen(N, F, ld)
	dg := k.f32("dgate", dgate, span)
	du := k.f32("dup", dup, span)
	d := k.in("dout", dout, N*F)
	g := k.in("gate", gate, span)
	u := k.in("up", up, span)
	if k.Skip(N, F) {
		return
	}
	if ld == F {
		n := N * F
		c.parallelFor(n, grainElems/4, func(lo, hi int) {
			vec.SwiGLUBackward(dg[lo:hi], du[lo:hi], d[lo:hi], g[lo:hi], u[lo:hi])
		})
		return
	}
	c.parallelFor(N, max(1, grainElems/4/F), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			s := r * ld
			vec.SwiGLUBackward(dg[s:s+F], du[s:s+F], d[r*F:r*F+F], g[s:s+F], u[s:s+F])
		}
	})
}

// AXPBY: out = alpha·a + beta·b (b unused when beta = 0).
func (c *cpuBackend) AXPBY(out, a, b Buffer, alpha, beta float32, n int) {
	k := c.check("AXPBY")
	k.Dims("n", n)
	o := k.f32("out", out, n)
	as := k.in("a", a, n)
	var bs []float32
	if beta != 0 {
		bs = k.in("b", b, n)
	}
	if k.Skip(n) {
		return
	}
	c.parallelFor(n, grainElems, func(lo, hi int) {
		if beta == 0 {
			vec.AXPBY(o[lo:hi], as[lo:hi], nil, alpha, 0)
			return
		}
		vec.AXPBY(o[lo:hi], as[lo:hi], bs[lo:hi], alpha, beta)
	})
}

// Mul: out = a·b.
func (c *cpuBackend) Mul(out, a, b Buffer, n int) {
	k := c.check("Mul")
	k.Dims("n", n)
	o := k.f32("out", out, n)
	as := k.in("a", a, n)
	bs := k.in("b", b, n)
	if k.Skip(n) {
		return
	}
	c.parallelFor(n, grainElems, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			o[i] = as[i] * bs[i]
		}
	})
}

// AddBias: out[n,c] = x[n,c] + bias[c].
func (c *cpuBackend) AddBias(out, x, bias Buffer, N, C int) {
	k := c.check("AddBias")
	k.Dims("N,C", N, C)
	o := k.f32("out", out, N*C)
	xs := k.in("x", x, N*C)
	bs := k.in("bias", bias, C)
	if k.Skip(N, C) {
		return
	}
	c.parallelFor(N, rowGrain(C), func(lo, hi int) {
		for n := lo; n < hi; n++ {
			or, xr := o[n*C:n*C+C], xs[n*C:n*C+C]
			for i, v := range xr {
				or[i] = v + bs[i]
			}
		}
	})
}

// SumRows: out[c] = Σ_n x[n,c] (float64 accumulation, parallel over columns).
func (c *cpuBackend) SumRows(out, x Buffer, N, C int) {
	k := c.check("SumRows")
	k.Dims("N,C", N, C)
	o := k.f32("out", out, C)
	xs := k.in("x", x, N*C)
	if k.Bad {
		return
	}
	c.parallelFor(C, max(16, grainElems/max(N, 1)), func(lo, hi int) {
		acc := make([]float64, hi-lo)
		for n := 0; n < N; n++ {
			for i, v := range xs[n*C+lo : n*C+hi] {
				acc[i] += float64(v)
			}
		}
		for i, s := range acc {
			o[lo+i] = float32(s)
		}
	})
}

// Dot: out[0] = Σ a·b (float64 accumulation).
func (c *cpuBackend) Dot(out, a, b Buffer, n int) {
	k := c.check("Dot")
	k.Dims("n", n)
	o := k.f32("out", out, 1)
	as := k.in("a", a, n)
	bs := k.in("b", b, n)
	if k.Bad {
		return
	}
	var s float64
	for i, v := range as {
		s += float64(v) * float64(bs[i])
	}
	o[0] = float32(s)
}

// Dropout: out[i] = x[i]·keep(i)/(1−p), keep(i) = DropoutUniform(seed,i) ≥ p.
func (c *cpuBackend) Dropout(out, x Buffer, n int, p float32, seed uint64) {
	k := c.check("Dropout")
	k.Dims("n", n)
	if !(p >= 0 && p <= 1) {
		k.Failf("p = %v outside [0, 1]", p)
	}
	o := k.f32("out", out, n)
	xs := k.in("x", x, n)
	if k.Skip(n) {
		return
	}
	scale := float32(0)
	if p < 1 {
		scale = float32(1 / (1 - float64(p)))
	}
	c.parallelFor(n, grainElems/4, func(lo, hi int) {
		// keep(i) = DropoutUniform(seed, i) ≥ p, never for p = 1.
		vec.Dropout(o[lo:hi], xs[lo:hi], lo, p, scale, seed)
	})
}

// AdamW updates param, m and v in place (bias corrections in float64).
func (c *cpuBackend) AdamW(param, grad, m, v Buffer, n int, p AdamWParams) {
	k := c.check("AdamW")
	k.Dims("n", n)
	if p.Step < 1 {
		k.Failf("Step = %d, must be ≥ 1", p.Step)
	}
	ps := k.f32("param", param, n)
	g := k.in("grad", grad, n)
	ms := k.f32("m", m, n)
	vs := k.f32("v", v, n)
	if k.Skip(n) {
		return
	}
	b1, b2 := p.Beta1, p.Beta2
	bc1 := float32(1 - math.Pow(float64(b1), float64(p.Step)))
	bc2 := float32(1 - math.Pow(float64(b2), float64(p.Step)))
	rbc2 := float32(1 / math.Sqrt(float64(bc2)))
	a := vec.AdamWParams{B1: b1, C1: 1 - b1, B2: b2, C2: 1 - b2, BC1: bc1, RBC2: rbc2, Eps: p.Eps, LR: p.LR, WD: p.WeightDecay}
	c.parallelFor(n, grainElems/4, func(lo, hi int) {
		vec.AdamW(ps[lo:hi], g[lo:hi], ms[lo:hi], vs[lo:hi], a)
	})
}
