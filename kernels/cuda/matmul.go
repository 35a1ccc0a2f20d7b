package cuda

import "github.com/argrl/argrl/kernels"

// MatMul maps the row-major contract onto cuBLAS's column-major GEMM: a
// row-major X (r×c) is the column-major Xᵀ, so C = op(A)·op(B) is computed
// as Cᵀ = op(B)ᵀ·op(A)ᵀ, i.e. cuBLAS's A is our B and its B is our A:
//
//	cublas(transa = TransB, transb = TransA, m = N, n = M, k = K,
//	       A = B, lda = TransB ? K : N,  B = A, ldb = TransA ? M : K,
//	       C = C, ldc = N), strides as given.
//
// A BF16 B operand is widened into float32 scratch (exact), or with
// Options.BF16TensorCores A is rounded to bf16 instead and the GEMM runs on
// bf16 tensor cores with float32 accumulation. With BF16TensorCores a
// MatMul that asks for bf16 products (p.BF16: the LoRA A and B products and
// their backward when the model computes in bf16) rounds an F32 B to bf16
// as well and runs on the tensor cores; the f32 master tensors are not
// touched. Without p.BF16 an F32 × F32 product stays float32 (merging
// adapters, the value head).
//
// bf16 activations: a BF16 A goes to the tensor cores as it is (no
// rounding pass: its values are what rounding an F32 A gives), or is
// widened into scratch for a float32 product. A BF16 C is cuBLAS's
// CUDA_R_16BF C (the GEMM rounds its f32 result once, Beta reading the
// bf16 C) when the product runs on the tensor cores without a bias;
// otherwise (a float32 product, or the bias epilogue, whose f32 bias
// cuBLASLt would read as bf16 with a bf16 D) C's span is widened into f32
// scratch, the GEMM runs there and the span is rounded back (the elements
// the GEMM did not write round to themselves). p.LdC is cuBLAS's ldc.
func (be *Backend) MatMul(c, a, b kernels.Buffer, p kernels.MatMulParams) {
	o := be.begin("MatMul")
	defer o.end()
	nA, nB, nC := o.ArgCheck.MatMul(p)
	cb := o.buf("c", c, nC, kernels.WriteAny)
	ab := o.buf("a", a, nA, kernels.Read)
	bb := o.buf("b", b, nB, kernels.Read)
	if p.Bias != nil {
		o.buf("bias", p.Bias, p.N, kernels.Read)
	}
	if o.Skip(p.Batch, p.M, p.N) {
		return
	}
	g := gemmCall{
		TransA: p.TransB, TransB: p.TransA,
		M: p.N, N: p.M, K: p.K, Batch: p.Batch,
		Alpha: p.Alpha, Beta: p.Beta,
		A: bb.ptr(), B: ab.ptr(), C: cb.ptr(),
		TypeA: tF32, TypeB: tF32, TypeC: tF32,
		LdA:     int64(max(1, pick(p.TransB, p.K, p.N))),
		LdB:     int64(max(1, pick(p.TransA, p.M, p.K))),
		LdC:     int64(p.Ldc()),
		StrideA: int64(p.StrideB), StrideB: int64(p.StrideA), StrideC: int64(p.StrideC),
	}
	if be.opt.BF16TensorCores && (bb.dt == kernels.BF16 || p.BF16) {
		g.TypeA, g.TypeB = tBF16, tBF16
		if ab.dt == kernels.F32 { // round A (a BF16 A is read as it is)
			g.B = o.scratch(int64(nA) * 2)
			o.launch("f32_to_bf16_kernel", grid1(int64(nA)), block1, pArg(g.B), pArg(ab.ptr()), lArg(int64(nA)))
		}
		if bb.dt == kernels.F32 { // an f32 operand with bf16 products asked (LoRA's A and B)
			g.A = o.scratch(int64(nB) * 2)
			o.launch("f32_to_bf16_kernel", grid1(int64(nB)), block1, pArg(g.A), pArg(bb.ptr()), lArg(int64(nB)))
		}
	} else {
		g.A = o.in("b", b, nB) // a BF16 operand widened into scratch
		g.B = o.in("a", a, nA)
	}
	if p.Bias != nil {
		g.Bias = o.in("bias", p.Bias, p.N)
	}
	var cBF16 devPtr // a BF16 C computed in f32 scratch, rounded back after
	if cb.dt == kernels.BF16 {
		if g.TypeA == tBF16 && g.Bias == 0 {
			g.TypeC = tBF16
		} else {
			cBF16 = g.C
			g.C = o.scratch(int64(nC) * 4)
			o.launch("bf16_to_f32_kernel", grid1(int64(nC)), block1, pArg(g.C), pArg(cBF16), lArg(int64(nC)))
		}
	}
	if o.Bad {
		return
	}
	if g.Bias != 0 {
		o.check(be.dev.gemmLt(&g))
	} else {
		o.check(be.dev.gemm(&g))
	}
	if cBF16 != 0 {
		o.launch("f32_to_bf16_kernel", grid1(int64(nC)), block1, pArg(cBF16), pArg(g.C), lArg(int64(nC)))
	}
}

func pick(c bool, x, y int) int {
	if c {
		return x
	}
	return y
}

// BF16Products reports Options.BF16TensorCores: MatMuls with p.BF16 then
// run in bf16 arithmetic (kernels.BF16Products), so a model's "auto"
// compute is bf16 in the tensor-core modes.
func (be *Backend) BF16Products() bool { return be.opt.BF16TensorCores }

// FusedProjections: models on this backend concatenate each layer's q/k/v
// and gate/up weights at upload and run each group as one GEMM
// (kernels.FusedProjections).
func (be *Backend) FusedProjections() bool { return true }
