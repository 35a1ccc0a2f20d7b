package kernels

import (
	"gonum.org/v1/gonum/blas"

	"github.com/argrl/argrl/kernels/internal/sgemm"
)

// MatMul: C[b] = Alpha·op(A[b])·op(B[b]) + Beta·C[b] through sgemm.
//
//	A [Batch: StrideA] M×K (K×M with TransA)
//	B [Batch: StrideB] K×N (N×K with TransB), F32 or BF16
//	C [Batch: StrideC] M×N
//
// A BF16 B operand is read as bf16 by the assembly SGEMM, which widens it
// while packing (no float32 copy of B; results bit-identical to the product
// with the widened B). With gonum or OpenBLAS it is widened in column
// blocks of at most widenBlockElems elements (matMulWidened).
//
// With p.BF16 on a CPU with AVX512-BF16 (c.dot), the product is the bf16
// dot GEMM of kernels/internal/sgemm (operands rounded while packing, a
// BF16 B read as it is, float32 sums); elsewhere BF16 is ignored.
//
// A BF16 A or C goes through F32 temporaries (matMulBF16IO): the CPU has
// no use for bf16 activations, this is the contract's conversion.
func (c *cpuBackend) MatMul(cb, ab, bb Buffer, p MatMulParams) {
	if isBF16(ab) || isBF16(cb) {
		c.matMulBF16IO(cb, ab, bb, p)
		return
	}
	c.matMul(cb, ab, bb, p)
	if p.Bias != nil {
		c.matMulBias(cb, p)
	}
}

// matMulBias adds p.Bias [N] to every row of every batch item of C after
// the product (MatMulParams.Bias): the float32 addition AddBias does.
func (c *cpuBackend) matMulBias(cb Buffer, p MatMulParams) {
	k := c.check("MatMul")
	_, _, nC := k.MatMul(p)
	C := k.f32("c", cb, nC)
	bias := k.in("bias", p.Bias, p.N)
	if k.Skip(p.Batch, p.M, p.N) {
		return
	}
	ldc := p.Ldc()
	for bt := 0; bt < p.Batch; bt++ {
		cc := C[bt*p.StrideC:]
		c.parallelFor(p.M, rowGrain(p.N), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				row := cc[i*ldc : i*ldc+p.N]
				for j, b := range bias {
					row[j] += b
				}
			}
		})
	}
}

// isBF16 reports whether b is a live BF16 CPU buffer.
func isBF16(b Buffer) bool {
	cb, ok := b.(*cpuBuf)
	return ok && cb.Live() && cb.dt == BF16
}

// matMulBF16IO is MatMul with a BF16 A or C: A is widened into an F32
// temporary (exact), C's whole span into another (so that Beta reads its
// values and the elements between rows keep theirs), the F32 MatMul runs
// over them, and C's span is rounded back (BF16FromFloat32: an element
// the product did not write rounds to itself).
func (c *cpuBackend) matMulBF16IO(cb, ab, bb Buffer, p MatMulParams) {
	k := c.check("MatMul")
	nA, nB, nC := k.MatMul(p)
	k.buf("c", cb, nC, WriteAny)
	k.buf("a", ab, nA, Read)
	k.buf("b", bb, nB, Read)
	if p.Bias != nil {
		k.buf("bias", p.Bias, p.N, Read)
	}
	if k.Skip(p.Batch, p.M, p.N) {
		return
	}
	widen := func(b Buffer, n int) Buffer {
		if !isBF16(b) {
			return b
		}
		t := c.Alloc(F32, n)
		c.Convert(t, c.View(b, 0, n))
		return t
	}
	a, cc := widen(ab, nA), widen(cb, nC)
	c.MatMul(cc, a, bb, p)
	if a != ab {
		c.Free(a)
	}
	if cc != cb {
		c.Convert(c.View(cb, 0, nC), cc)
		c.Free(cc)
	}
}

func (c *cpuBackend) matMul(cb, ab, bb Buffer, p MatMulParams) {
	k := c.check("MatMul")
	nA, nB, nC := k.MatMul(p)
	C := k.f32("c", cb, nC)
	A := k.f32in("a", ab, nA)
	B := k.buf("b", bb, nB, Read)
	M, N, K, ldc := p.M, p.N, p.K, p.Ldc()
	if k.Skip(p.Batch, M, N) {
		return
	}
	if K == 0 { // C = Beta·C
		for bt := 0; bt < p.Batch; bt++ {
			for i := range M {
				row := C[bt*p.StrideC+i*ldc:][:N]
				for j := range row {
					if p.Beta == 0 {
						row[j] = 0
					} else {
						row[j] *= p.Beta
					}
				}
			}
		}
		return
	}
	tA, lda := blas.NoTrans, K
	if p.TransA {
		tA, lda = blas.Trans, M
	}
	tB, ldb := blas.NoTrans, N
	if p.TransB {
		tB, ldb = blas.Trans, K
	}
	bm := bmat{f: B.st.f, h: B.st.h, bf16: B.dt == BF16}
	dot := p.BF16 && c.dot != nil
	if bm.bf16 && c.bgemm == nil && !dot {
		c.matMulWidened(p, A, bm.at(B.off, nB), C, tA, lda, tB)
		return
	}
	if dot && bm.bf16 && p.TransB && (p.Batch == 1 || p.StrideB == 0) {
		bm.packed = c.packedB(B.st, B.off, N, K, M) // a frozen weight's panels, packed once
	}
	narrow := c.narrow(dot, bm.bf16, M, N) && ldc == N
	item := func(bt int) {
		a, b, cc := A[bt*p.StrideA:][:M*K], bm.at(B.off+bt*p.StrideB, K*N), C[bt*p.StrideC:][:(M-1)*ldc+N]
		b.packed = bm.packed // one weight for every item (Batch 1 or StrideB 0)
		if narrow {
			c.gemmT(dot, tA, tB, M, N, K, p.Alpha, a, lda, b.f, ldb, p.Beta, cc)
			return
		}
		c.gemm(dot, tA, tB, M, N, K, p.Alpha, a, lda, b, ldb, p.Beta, cc, ldc)
	}
	// Many small products: one goroutine per chunk of batch items (BLAS
	// does not parallelize small matrices); large ones: BLAS threads.
	if p.Batch > 1 && M*N*K < 1<<18 {
		c.parallelFor(p.Batch, max(1, (1<<16)/(M*N*K+1)), func(lo, hi int) {
			for bt := lo; bt < hi; bt++ {
				item(bt)
			}
		})
		return
	}
	for bt := 0; bt < p.Batch; bt++ {
		item(bt)
	}
}

// narrow reports whether an M×N product with an f32 B runs faster as its
// transpose: with the assembly kernels (dot, or the SGEMM that packs bf16
// itself), when N is below the kernel's register tile width (the LoRA rank
// r of x·Aᵀ, dT = dU·B, dB = dUᵀ·T) and M fills whole tiles of it.
func (c *cpuBackend) narrow(dot, bf16B bool, M, N int) bool {
	nr := c.alignN
	switch {
	case dot:
		nr = c.dot.NR
	case c.bgemm == nil: // gonum or OpenBLAS
		return false
	}
	return !bf16B && N < nr && M >= 2*nr
}

// gemmT is gemm computed as Cᵀ = op(B)ᵀ·op(A)ᵀ into scratch (N×M) and
// transposed into cc (M×N, leading dimension N). The kernels sum every
// element's products in the same order either way (a·b = b·a), so cc gets
// the bits gemm would give.
func (c *cpuBackend) gemmT(dot bool, tA, tB blas.Transpose, M, N, K int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, cc []float32) {
	sp := getScratch(M * N)
	defer putScratch(sp)
	ct := *sp
	if beta != 0 {
		for i := 0; i < M; i++ {
			for j, v := range cc[i*N : i*N+N] {
				ct[j*M+i] = v
			}
		}
	}
	flip := func(t blas.Transpose) blas.Transpose {
		if t == blas.NoTrans {
			return blas.Trans
		}
		return blas.NoTrans
	}
	c.gemm(dot, flip(tB), flip(tA), N, M, K, alpha, b, ldb, bmat{f: a}, lda, beta, ct, M)
	for i := 0; i < M; i++ {
		row := cc[i*N : i*N+N]
		for j := range row {
			row[j] = ct[j*M+i]
		}
	}
}

// bmat is MatMul's B operand: float32 elements, or bfloat16 bits when bf16.
type bmat struct {
	f    []float32
	h    []uint16
	bf16 bool
	// packed, if set, is op(B) packed for the dot GEMM (cpu_prepack.go),
	// read from column col on; f and h are then unused.
	packed *sgemm.PackedDot
	col    int
}

// at is the n elements of m from off.
func (m bmat) at(off, n int) bmat {
	if m.bf16 {
		return bmat{h: m.h[off : off+n], bf16: true}
	}
	return bmat{f: m.f[off : off+n]}
}

// from is m from element off on.
func (m bmat) from(off int) bmat {
	if m.bf16 {
		return bmat{h: m.h[off:], bf16: true}
	}
	return bmat{f: m.f[off:]}
}

// sgemm1 is one single call of the BLAS with B f32 or (c.bgemm) bf16, or
// of the bf16 dot GEMM when dot.
func (c *cpuBackend) sgemm1(dot bool, tA, tB blas.Transpose, M, N, K int, alpha float32, a []float32, lda int, b bmat, ldb int, beta float32, cc []float32, ldc int) {
	switch {
	case dot && b.packed != nil && sgemm.GemmDotPacked(c.dot, tA != blas.NoTrans, M, N, K, alpha, a, lda, b.packed, b.col, beta, cc, ldc):
	case dot && b.bf16:
		sgemm.GemmDotBF16(c.dot, tA != blas.NoTrans, tB != blas.NoTrans, M, N, K, alpha, a, lda, b.h, ldb, beta, cc, ldc)
	case dot:
		sgemm.GemmDot(c.dot, tA != blas.NoTrans, tB != blas.NoTrans, M, N, K, alpha, a, lda, b.f, ldb, beta, cc, ldc)
	case b.bf16:
		c.bgemm(tA, tB, M, N, K, alpha, a, lda, b.h, ldb, beta, cc, ldc)
	default:
		c.sgemm(tA, tB, M, N, K, alpha, a, lda, b.f, ldb, beta, cc, ldc)
	}
}

// gemm is one sgemm (dot: one bf16 dot GEMM); with c.split (always for the
// dot GEMM), a product of at least 2²¹ multiply-adds is cut into c.par
// blocks of rows of C (or of columns when N > M), one single-threaded call
// per goroutine. Blocks are multiples of the kernel's register tile
// (c.alignM rows, c.alignN columns).
func (c *cpuBackend) gemm(dot bool, tA, tB blas.Transpose, M, N, K int, alpha float32, a []float32, lda int, b bmat, ldb int, beta float32, cc []float32, ldc int) {
	split, alignM, alignN := c.split, c.alignM, c.alignN
	if dot {
		split, alignM, alignN = true, c.dot.MR, c.dot.NR
	}
	if !split || c.par < 2 || M*N*K < 1<<21 {
		c.sgemm1(dot, tA, tB, M, N, K, alpha, a, lda, b, ldb, beta, cc, ldc)
		return
	}
	if M >= N {
		blk := (M + c.par - 1) / c.par
		blk = (blk + alignM - 1) / alignM * alignM
		c.parallelFor((M+blk-1)/blk, 1, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				m0 := i * blk
				mb := min(blk, M-m0)
				aoff := m0 * lda // rows of A
				if tA == blas.Trans {
					aoff = m0 // columns of the stored K×M A
				}
				c.sgemm1(dot, tA, tB, mb, N, K, alpha, a[aoff:], lda, b, ldb, beta, cc[m0*ldc:], ldc)
			}
		})
		return
	}
	blk := (N + c.par - 1) / c.par
	blk = (blk + alignN - 1) / alignN * alignN
	c.parallelFor((N+blk-1)/blk, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			n0 := i * blk
			nb := min(blk, N-n0)
			boff := n0 // columns of the stored K×N B
			if tB == blas.Trans {
				boff = n0 * ldb // rows of the stored N×K B
			}
			bb := b
			if b.packed != nil {
				bb.col += n0
			} else {
				bb = b.from(boff)
			}
			c.sgemm1(dot, tA, tB, M, nb, K, alpha, a, lda, bb, ldb, beta, cc[n0:], ldc)
		}
	})
}

// widenBlockElems bounds the float32 scratch of matMulWidened: 4 Mi
// elements (16 MiB) per call, whatever the size of B (gonum's x·Wᵀ may
// need blocks of up to 4·64 columns, more for K > 16384).
var widenBlockElems = 1 << 22

// matMulWidened is MatMul with a BF16 B for a BLAS that reads only float32
// (gonum, OpenBLAS): op(B) is widened a block of columns at a time and each
// block is one product C[:, n0:n0+w] = op(A)·op(B)[:, n0:n0+w] through
// gemm (blocks: widenWidth). A broadcast B (StrideB = 0) is widened once
// per block for the whole batch. b holds B's elements over the batch.
func (c *cpuBackend) matMulWidened(p MatMulParams, A []float32, b bmat, C []float32, tA blas.Transpose, lda int, tB blas.Transpose) {
	M, N, K := p.M, p.N, p.K
	nb, merge := c.widenWidth(tA, tB, M, N, K)
	wmax := nb
	if merge {
		wmax = min(N, 2*nb-1)
	}
	sp := getScratch(K * wmax)
	defer putScratch(sp)
	for n0, w := 0, 0; n0 < N; n0 += w {
		w = min(nb, N-n0)
		if merge && N-n0 < 2*nb {
			w = N - n0 // the tail joins the last block
		}
		blk := (*sp)[:K*w]
		ldw := w // the block of the stored K×N B: K rows of w
		if tB == blas.Trans {
			ldw = K // the block of the stored N×K B: w rows of K
		}
		for bt := 0; bt < p.Batch; bt++ {
			if bt == 0 || p.StrideB != 0 {
				c.widenCols(blk, b.h[bt*p.StrideB:][:K*N], tB == blas.Trans, K, N, n0, w)
			}
			c.gemm(false, tA, tB, M, w, K, p.Alpha, A[bt*p.StrideA:][:M*K], lda, bmat{f: blk}, ldw, p.Beta, C[bt*p.StrideC+n0:], p.Ldc())
		}
	}
}

// widenWidth is the column block width nb of matMulWidened (K·nb ≤
// widenBlockElems, nb a multiple of the split's column alignment), and
// whether a tail shorter than nb joins the last block. For gonum, whose
// C = x·Wᵀ sums each row·row dot product over all of K when the product
// has fewer than 4 tiles of 64×64 and in chunks of 64 otherwise, blocks are
// whole 64-column tiles and, when the whole product has 4 tiles or more,
// so does every block (the tail joins the last one): every element of C is
// then the same sum as in one call over all of B.
func (c *cpuBackend) widenWidth(tA, tB blas.Transpose, M, N, K int) (nb int, merge bool) {
	if !c.gonum {
		return min(N, max(c.alignN, widenBlockElems/K/c.alignN*c.alignN)), false
	}
	const tile = 64
	nb = max(tile, widenBlockElems/2/K/tile*tile)
	if tA == blas.NoTrans && tB == blas.Trans {
		tiles := func(n int) int { return (n + tile - 1) / tile }
		if rows := tiles(M); rows*tiles(N) >= 4 {
			nb = max(nb, tile*((4+rows-1)/rows))
		}
	}
	return min(N, nb), true
}

// widenCols widens columns [n0, n0+w) of op(B) (K×N; B stored N×K when
// tB) into dst, laid out as the stored B's block: K rows of w, or (tB) w
// rows of K.
func (c *cpuBackend) widenCols(dst []float32, h []uint16, tB bool, K, N, n0, w int) {
	if tB {
		src := h[n0*K : (n0+w)*K]
		c.parallelFor(len(src), grainElems, func(lo, hi int) {
			for i, v := range src[lo:hi] {
				dst[lo+i] = Float32FromBF16(v)
			}
		})
		return
	}
	c.parallelFor(K, rowGrain(w), func(lo, hi int) {
		for p := lo; p < hi; p++ {
			d := dst[p*w : p*w+w]
			for j, v := range h[p*N+n0 : p*N+n0+w] {
				d[j] = Float32FromBF16(v)
			}
		}
	})
}
