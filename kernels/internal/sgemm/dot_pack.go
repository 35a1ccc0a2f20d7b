package sgemm

// The packers of the dot GEMM (dot.go): each writes pairs of bf16 into a
// micro-panel d (a pair row of ldd elements per two k), from float32
// (rounded by RoundBF16) or bf16 sources; assembly for whole blocks when
// the machine has it (dot_amd64.s), plain loops for the rest. Bounds are
// checked here before any assembly runs.

// cvtGather packs rows×kc of float32 src (rows at stride lds, k along a
// row) transposed: d[q*ldd+i] = pair(bf16(src[i*lds+2q]), bf16(src[i*lds+2q+1])),
// 0 for k ≥ kc. Groups of 8 rows and 16 k go through cvtTranspose8.
func cvtGather(d []uint32, ldd int, src []float32, lds, rows, kc int) {
	kp := (kc + 1) / 2
	i := 0
	if cvtTranspose8 != nil && kc >= 16 {
		kb := kc / 16
		for ; i+8 <= rows; i += 8 {
			_ = src[(i+7)*lds+kb*16-1] // the assembly reads 8 rows of kb·16
			_ = d[(kb*8-1)*ldd+i+7]    // and writes kb·8 pair rows of 8
			cvtTranspose8(&d[i], ldd, &src[i*lds], lds, kb)
			for q := kb * 8; q < kp; q++ {
				for r := i; r < i+8; r++ {
					d[q*ldd+r] = pairF32(src[r*lds:], 2*q, kc)
				}
			}
		}
	}
	for ; i < rows; i++ {
		for q := 0; q < kp; q++ {
			d[q*ldd+i] = pairF32(src[i*lds:], 2*q, kc)
		}
	}
}

// pairF32 is the pair of row[k], row[k+1] (0 for k+1 ≥ kc).
func pairF32(row []float32, k, kc int) uint32 {
	if k+1 < kc {
		return pair(RoundBF16(row[k]), RoundBF16(row[k+1]))
	}
	return pair(RoundBF16(row[k]), 0)
}

// pairBF16 is the pair of row[k], row[k+1] (0 for k+1 ≥ kc).
func pairBF16(row []uint16, k, kc int) uint32 {
	if k+1 < kc {
		return pair(row[k], row[k+1])
	}
	return pair(row[k], 0)
}

// pairGatherBF16 is cvtGather from bf16 src, taken as it is. With an even
// lds, groups of 8 rows and 16 k go through pairTranspose8 (pairs are then
// 32-bit elements of the rows).
func pairGatherBF16(d []uint32, ldd int, src []uint16, lds, rows, kc int) {
	kp := (kc + 1) / 2
	i := 0
	if pairTranspose8 != nil && kc >= 16 && lds%2 == 0 {
		kb := kc / 16
		for ; i+8 <= rows; i += 8 {
			_ = src[(i+7)*lds+kb*16-1]
			_ = d[(kb*8-1)*ldd+i+7]
			pairTranspose8(&d[i], ldd, &src[i*lds], lds/2, kb)
			for q := kb * 8; q < kp; q++ {
				for r := i; r < i+8; r++ {
					d[q*ldd+r] = pairBF16(src[r*lds:], 2*q, kc)
				}
			}
		}
	}
	for ; i < rows; i++ {
		for q := 0; q < kp; q++ {
			d[q*ldd+i] = pairBF16(src[i*lds:], 2*q, kc)
		}
	}
}

// interleaveBF16 packs kc rows (k) of cols columns of bf16 src (rows at
// stride lds) by pairs of rows: d[q*ldd+j] = pair(src[2q*lds+j],
// src[(2q+1)*lds+j]), 0 for k ≥ kc. Blocks of 16 columns over whole pairs
// go through interleave16BF16.
func interleaveBF16(d []uint32, ldd int, src []uint16, lds, kc, cols int) {
	full := kc / 2
	j := 0
	if interleave16BF16 != nil && full > 0 && cols >= 16 {
		j = cols &^ 15
		_ = src[(2*full-1)*lds+j-1]
		_ = d[(full-1)*ldd+j-1]
		interleave16BF16(&d[0], ldd, &src[0], lds, full, j/16)
	}
	for q := 0; q < full; q++ {
		r0, r1 := src[2*q*lds:], src[(2*q+1)*lds:]
		for c := j; c < cols; c++ {
			d[q*ldd+c] = pair(r0[c], r1[c])
		}
	}
	if kc%2 == 1 {
		r0 := src[(kc-1)*lds:]
		for c := 0; c < cols; c++ {
			d[full*ldd+c] = pair(r0[c], 0)
		}
	}
}

// interleaveF32 is interleaveBF16 from float32 src, rounding; blocks of 16
// and then 8 columns go through interleave16F32 and interleave8F32.
func interleaveF32(d []uint32, ldd int, src []float32, lds, kc, cols int) {
	full := kc / 2
	j := 0
	if full > 0 && interleave16F32 != nil {
		if cols >= 16 {
			j = cols &^ 15
			_ = src[(2*full-1)*lds+j-1]
			_ = d[(full-1)*ldd+j-1]
			interleave16F32(&d[0], ldd, &src[0], lds, full, j/16)
		}
		if cols-j >= 8 {
			_ = src[(2*full-1)*lds+j+7]
			_ = d[(full-1)*ldd+j+7]
			interleave8F32(&d[j], ldd, &src[j], lds, full, 1)
			j += 8
		}
	}
	for q := 0; q < full; q++ {
		r0, r1 := src[2*q*lds:], src[(2*q+1)*lds:]
		for c := j; c < cols; c++ {
			d[q*ldd+c] = pair(RoundBF16(r0[c]), RoundBF16(r1[c]))
		}
	}
	if kc%2 == 1 {
		r0 := src[(kc-1)*lds:]
		for c := 0; c < cols; c++ {
			d[full*ldd+c] = pair(RoundBF16(r0[c]), 0)
		}
	}
}

// The assembly packers (dot_amd64.s), set by availableDot on machines that
// have them; each is its Go caller's loop over raw pointers.
var (
	cvtTranspose8    func(d *uint32, ldd int, s *float32, lds int, blocks int)
	pairTranspose8   func(d *uint32, ldd int, s *uint16, lds2 int, blocks int)
	interleave16BF16 func(d *uint32, ldd int, s *uint16, lds int, pairs, blocks int)
	interleave16F32  func(d *uint32, ldd int, s *float32, lds int, pairs, blocks int)
	interleave8F32   func(d *uint32, ldd int, s *float32, lds int, pairs, blocks int)
)
