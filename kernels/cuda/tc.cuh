// tc.cuh: the tensor-core primitives — mma.sync m16n8k16 (bf16 in, f32
// accumulate), ldmatrix (x1/x2/x4, with and without .trans) and cp.async
// with commit/wait groups. These are the only inline PTX in kernels/cuda:
// each function has the PTX body for nvcc and an emulator body for g++
// (ARGRL_EMU) that follows the PTX ISA's fragment layouts lane by lane
// (emu/cuda_emu.h: emu::mma_m16n8k16, emu::ldmatrix, emu::cp_async*).
//
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k16" with
// .bf16, and "ldmatrix"). In a warp, lane l has group g = l>>2 and
// thread-in-group t = l&3. A 32-bit register holds two bf16, the lower
// column (or k) index in the low half.
//
//	A 16×16 (row-major, M×K), 4 registers:
//	  a[0] = A[g][2t..2t+1]     a[1] = A[g+8][2t..2t+1]
//	  a[2] = A[g][2t+8..2t+9]   a[3] = A[g+8][2t+8..2t+9]
//	B 16×8 (K×N, "col"), 2 registers:
//	  b[0] = B[2t..2t+1][g]     b[1] = B[2t+8..2t+9][g]
//	C, D 16×8 f32, 4 registers:
//	  c[0..1] = C[g][2t..2t+1]  c[2..3] = C[g+8][2t..2t+1]
//	ldmatrix .m8n8 .b16: matrix i (of 1, 2 or 4) has its 8 rows of 8 bf16
//	  (16 bytes, 16-byte aligned, in shared memory) at the addresses lanes
//	  8i..8i+7 pass; lane l receives r[i] = M_i[g][2t..2t+1], or with
//	  .trans r[i] = (M_i[2t][g], M_i[2t+1][g]).
//
// So with an A tile stored row-major in shared memory, ldmatrix_x4 where
// lane l points at row (l&15), column 8·(l>>4) yields exactly a[0..3]; a
// B operand stored N×K (K contiguous, e.g. K rows of attention's keys for
// Q·Kᵀ) is ldmatrix_x2 without .trans (lane l at row l&7, column
// 8·((l>>3)&1)); stored K×N (N contiguous, e.g. V for P·V) it is
// ldmatrix_x2 with .trans (lane l at row l&15).
//
// The emulator's mma sums each output as c + Σ_k a·b with k = 0..15 in
// order in float32 (the bf16 products are exact); the hardware's internal
// order and rounding are unspecified by the ISA, so results on a GPU may
// differ from the emulator's by float32 rounding, never in layout.
#pragma once
#include "common.cuh"

// pack_bf16x2 packs two floats, rounded to bf16, low half first.
__device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi) {
  return (unsigned)f32_to_bf16(lo) | ((unsigned)f32_to_bf16(hi) << 16);
}

// mma_bf16: d = a·b + c for one warp's 16×8×16 tile (layouts above).
__device__ __forceinline__ void mma_bf16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                                         const float (&c)[4]) {
#if defined(ARGRL_EMU)
  emu::mma_m16n8k16(__LINE__, d, a, b, c);
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
        "f"(c[3]));
#endif
}

#if !defined(ARGRL_EMU)
__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
#endif

// ldmatrix_x4 / _x2 / _x1: every lane of the warp calls it; lane l passes
// the address of row l&7 of matrix l>>3 (only lanes below 8·count are read).
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const bf16_t* p) {
#if defined(ARGRL_EMU)
  emu::ldmatrix(__LINE__, r, 4, false, p);
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
#endif
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const bf16_t* p) {
#if defined(ARGRL_EMU)
  emu::ldmatrix(__LINE__, r, 4, true, p);
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
#endif
}

__device__ __forceinline__ void ldmatrix_x2(unsigned (&r)[2], const bf16_t* p) {
#if defined(ARGRL_EMU)
  emu::ldmatrix(__LINE__, r, 2, false, p);
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr(p)));
#endif
}

__device__ __forceinline__ void ldmatrix_x2_trans(unsigned (&r)[2], const bf16_t* p) {
#if defined(ARGRL_EMU)
  emu::ldmatrix(__LINE__, r, 2, true, p);
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr(p)));
#endif
}

__device__ __forceinline__ void ldmatrix_x1(unsigned (&r)[1], const bf16_t* p) {
#if defined(ARGRL_EMU)
  emu::ldmatrix(__LINE__, r, 1, false, p);
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(smem_addr(p)));
#endif
}

__device__ __forceinline__ void ldmatrix_x1_trans(unsigned (&r)[1], const bf16_t* p) {
#if defined(ARGRL_EMU)
  emu::ldmatrix(__LINE__, r, 1, true, p);
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(smem_addr(p)));
#endif
}

// cp_async16 starts a 16-byte copy global → shared (both 16-byte aligned);
// with ok false it copies nothing and zero-fills the 16 bytes (src must
// still be a valid address). The data may be read only after the thread's
// cp_async_wait for its group and, by other threads, a __syncthreads.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool ok) {
#if defined(ARGRL_EMU)
  emu::cp_async(dst, src, 16, ok ? 16 : 0);
#else
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(ok ? 16 : 0));
#endif
}

// cp_async_commit closes the thread's current group of copies.
__device__ __forceinline__ void cp_async_commit() {
#if defined(ARGRL_EMU)
  emu::cp_async_commit();
#else
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// cp_async_wait<N> waits until at most N of the thread's committed groups
// are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(ARGRL_EMU)
  emu::cp_async_wait(N);
#else
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}
