package kernels

import "gonum.org/v1/gonum/blas"

// MatMul: C[b] = Alpha·op(A[b])·op(B[b]) + Beta·C[b] through sgemm.
//
//	A [Batch: StrideA] M×K (K×M with TransA)
//	B [Batch: StrideB] K×N (N×K with TransB), F32 or BF16
//	C [Batch: StrideC] M×N
//
// A BF16 B operand is widened into a pooled scratch array per batch item
// (once when StrideB = 0 broadcasts it).
func (c *cpuBackend) MatMul(cb, ab, bb Buffer, p MatMulParams) {
	k := chk{c: c, op: "MatMul"}
	k.dims("Batch,M,N,K,StrideA,StrideB,StrideC", p.Batch, p.M, p.N, p.K, p.StrideA, p.StrideB, p.StrideC)
	if k.bad {
		return
	}
	M, N, K := p.M, p.N, p.K
	if p.Batch == 0 || M == 0 || N == 0 {
		return
	}
	if p.Batch > 1 && p.StrideC < M*N {
		k.failf("StrideC %d < M·N = %d with Batch %d (outputs would overlap)", p.StrideC, M*N, p.Batch)
		return
	}
	span := func(stride, size int) int { return (p.Batch-1)*stride + size }
	C := k.f32("c", cb, span(p.StrideC, M*N))
	A := k.f32("a", ab, span(p.StrideA, M*K))
	B := k.get("b", bb, span(p.StrideB, K*N))
	if k.bad {
		return
	}
	if K == 0 { // C = Beta·C
		for bt := 0; bt < p.Batch; bt++ {
			cc := C[bt*p.StrideC:][:M*N]
			for i := range cc {
				if p.Beta == 0 {
					cc[i] = 0
				} else {
					cc[i] *= p.Beta
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
	var conv *[]float32
	bf16At := func(bt int) []float32 {
		if conv == nil {
			conv = getScratch(K * N)
		} else if p.StrideB == 0 && bt > 0 {
			return *conv
		}
		src := B.st.h[B.off+bt*p.StrideB:][:K*N]
		dst := *conv
		for i, h := range src {
			dst[i] = Float32FromBF16(h)
		}
		return dst
	}
	one := func(bt int, bs []float32) {
		c.gemm(tA, tB, M, N, K, p.Alpha, A[bt*p.StrideA:][:M*K], lda, bs, ldb, p.Beta, C[bt*p.StrideC:][:M*N], N)
	}
	if B.dt == BF16 {
		for bt := 0; bt < p.Batch; bt++ {
			one(bt, bf16At(bt))
		}
		putScratch(conv)
		return
	}
	Bf := B.st.f[B.off:]
	bAt := func(bt int) []float32 { return Bf[bt*p.StrideB:][:K*N] }
	// Many small products: one goroutine per chunk of batch items (BLAS
	// does not parallelize small matrices); large ones: BLAS threads.
	if p.Batch > 1 && M*N*K < 1<<18 {
		c.parallelFor(p.Batch, max(1, (1<<16)/(M*N*K+1)), func(lo, hi int) {
			for bt := lo; bt < hi; bt++ {
				c.sgemm(tA, tB, M, N, K, p.Alpha, A[bt*p.StrideA:][:M*K], lda, bAt(bt), ldb, p.Beta, C[bt*p.StrideC:][:M*N], N)
			}
		})
		return
	}
	for bt := 0; bt < p.Batch; bt++ {
		one(bt, bAt(bt))
	}
}

// gemm is one sgemm; with gemmSplit, a product of at least 2²¹ multiply-adds
// is cut into c.par blocks of rows of C (or of columns when N > M), one
// single-threaded BLAS call per goroutine. Blocks are multiples of
// gemmAlignM rows (gemmAlignN columns): the BLAS's register tile.
func (c *cpuBackend) gemm(tA, tB blas.Transpose, M, N, K int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, cc []float32, ldc int) {
	if !gemmSplit || c.par < 2 || M*N*K < 1<<21 {
		c.sgemm(tA, tB, M, N, K, alpha, a, lda, b, ldb, beta, cc, ldc)
		return
	}
	if M >= N {
		blk := (M + c.par - 1) / c.par
		blk = (blk + gemmAlignM - 1) / gemmAlignM * gemmAlignM
		c.parallelFor((M+blk-1)/blk, 1, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				m0 := i * blk
				mb := min(blk, M-m0)
				aoff := m0 * lda // rows of A
				if tA == blas.Trans {
					aoff = m0 // columns of the stored K×M A
				}
				c.sgemm(tA, tB, mb, N, K, alpha, a[aoff:], lda, b, ldb, beta, cc[m0*ldc:], ldc)
			}
		})
		return
	}
	blk := (N + c.par - 1) / c.par
	blk = (blk + gemmAlignN - 1) / gemmAlignN * gemmAlignN
	c.parallelFor((N+blk-1)/blk, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			n0 := i * blk
			nb := min(blk, N-n0)
			boff := n0 // columns of the stored K×N B
			if tB == blas.Trans {
				boff = n0 * ldb // rows of the stored N×K B
			}
			c.sgemm(tA, tB, M, nb, K, alpha, a, lda, b[boff:], ldb, beta, cc[n0:], ldc)
		}
	})
}
