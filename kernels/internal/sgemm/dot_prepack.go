package sgemm

// A B operand packed once for the dot GEMM (a frozen weight that decoding
// multiplies on every step): the micro-panels gemmDot's packBDot would
// write for every (K block, column block), kept. GemmDotPacked then runs
// the same loop nest reading them in place, so its result is the bits
// GemmDotBF16 gives, without re-reading and re-packing the weight on each
// call (27–29% of a decode step's time before, BENCHMARKS.md).
//
//	blocks[kb]   [⌈N/NR⌉ panels][kp pairs][NR]   kb = pc/kcb, kp = ⌈kc/2⌉
//
// Memory: N·K·2 bytes rounded up to whole panels, the size of the bf16
// weight itself.

// PackedDot is op(B) (K×N) packed for kernel k's register tile.
type PackedDot struct {
	K, N, NR int
	kcb      int
	blocks   [][]uint32
}

// Bytes is the memory the packed panels take.
func (p *PackedDot) Bytes() int64 {
	var n int64
	for _, b := range p.blocks {
		n += int64(len(b)) * 4
	}
	return n
}

// PackDotBF16 packs op(B) of the bfloat16 B (the stored N×K B transposed
// when tB, else the stored K×N B, rows at stride ldb) for kernel k.
func PackDotBF16(k *DotKernel, tB bool, b []uint16, ldb, K, N int) *PackedDot {
	nr := k.NR
	p := &PackedDot{K: K, N: N, NR: nr, kcb: kcForDot(K)}
	np := (N + nr - 1) / nr
	for pc := 0; pc < K; pc += p.kcb {
		kc := min(p.kcb, K-pc)
		kp := (kc + 1) / 2
		blk := make([]uint32, np*nr*kp)
		packBDot(blk, tB, matB{h: b, bf16: true}, ldb, pc, 0, kc, N, nr)
		p.blocks = append(p.blocks, blk)
	}
	return p
}

// GemmDotPacked is GemmDotBF16 over columns [col0, col0+N) of the packed
// op(B): C (M×N) = alpha·bf16(op(A))·op(B)[:, col0:col0+N] + beta·C, the
// same operations in the same order. col0 must be a multiple of p.NR and
// k the kernel p was packed for; K must be p.K. It reports false, having
// written nothing, when p was packed for another shape or kernel (the
// caller then runs GemmDotBF16 on the unpacked operand: the same bits).
func GemmDotPacked(k *DotKernel, tA bool, M, N, K int, alpha float32, a []float32, lda int, p *PackedDot, col0 int, beta float32, c []float32, ldc int) bool {
	if k.NR != p.NR || K != p.K || col0%p.NR != 0 || col0 < 0 || col0+N > p.N {
		return false
	}
	if M <= 0 || N <= 0 {
		return true
	}
	_ = c[(M-1)*ldc+N-1]
	if K <= 0 || alpha == 0 {
		scaleC(M, N, beta, c, ldc)
		return true
	}
	mr, nr := k.MR, k.NR
	kcb := p.kcb
	kpb := (kcb + 1) / 2
	mcb, ncb := mnBlocks(M, N, mr, nr)
	pa, pas := alignedPairs(mcb * kpb)
	var pb []uint32
	blockLoop(M, N, K, mr, nr, kcb, mcb, ncb, beta,
		func(pc, jc, kc, nc int) {
			kp := (kc + 1) / 2
			pb = p.blocks[pc/kcb][(col0+jc)*kp:]
		},
		func(ic, pc, mc, kc int) { packADot(pa, tA, a, lda, ic, pc, mc, kc, mr) },
		func(ir, jr, i, j, kc, m, n int, bet float32) {
			kp := (kc + 1) / 2
			_ = pb[jr*kp+kp*nr-1] // the kernel reads one whole panel
			k.fn(kp, &pa[ir*kp], &pb[jr*kp], &c[i*ldc+j], ldc, alpha, bet, m, n)
		})
	pool.Put(pas)
	return true
}
