// common.cuh: helpers shared by every kernel source in kernels/cuda.
//
// Every .cu file here is compiled twice from the same text:
//   - by nvcc to PTX for sm_80 (gen.sh; embedded in the cuda backend), and
//   - by g++ as C++ with emu/cuda_emu.h included first (ARGRL_EMU defined),
//     which emulates threads, blocks, __syncthreads, shared memory and warp
//     shuffles on the CPU so the kernels are tested without a GPU.
// So kernels use only what the emulator provides: no dynamic shared memory,
// no inline PTX outside the tensor-core primitives of tc.cuh (mma.sync,
// ldmatrix, cp.async: each has an emulator body), no warp-synchronous code
// without __syncwarp/shuffles, and blockDim.x always a multiple of 32 (the
// Go launcher guarantees it).
//
// Shape legend (as in kernels/backend.go): B batch, T time, N = B*T rows,
// C channels, H heads (Hq query, Hkv key/value), D head dim, V vocabulary,
// S cache slots, Tmax slot length.
#pragma once

#if !defined(__CUDACC__) && !defined(ARGRL_EMU)
#error "compile with nvcc, or with g++ -include emu/cuda_emu.h"
#endif

#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu

// bf16 is stored as its 16 raw bits; arithmetic is always float32.
typedef unsigned short bf16_t;

__device__ __forceinline__ float bf16_to_f32(bf16_t h) {
  return __uint_as_float(((unsigned)h) << 16);
}

// Round to nearest, ties to even; NaN stays a quiet NaN (as
// kernels.BF16FromFloat32).
__device__ __forceinline__ bf16_t f32_to_bf16(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (bf16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (bf16_t)(u >> 16);
}

// The warp reductions are xor butterflies; under the emulator each is one
// collective with the same result in every lane (emu::warp_butterfly).
__device__ __forceinline__ float warp_sum(float v) {
#if defined(ARGRL_EMU)
  return emu::warp_butterfly(__LINE__, v, [](float a, float b) { return a + b; });
#else
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
  return v;
#endif
}

__device__ __forceinline__ float warp_max(float v) {
#if defined(ARGRL_EMU)
  return emu::warp_butterfly(__LINE__, v, [](float a, float b) { return fmaxf(a, b); });
#else
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, o));
  return v;
#endif
}

__device__ __forceinline__ unsigned long long warp_sum_u64(unsigned long long v) {
#if defined(ARGRL_EMU)
  return emu::warp_butterfly(__LINE__, v, [](unsigned long long a, unsigned long long b) { return a + b; });
#else
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
  return v;
#endif
}

__device__ __forceinline__ unsigned long long warp_max_u64(unsigned long long v) {
#if defined(ARGRL_EMU)
  return emu::warp_butterfly(__LINE__, v, [](unsigned long long a, unsigned long long b) { return b > a ? b : a; });
#else
  for (int o = 16; o > 0; o >>= 1) {
    unsigned long long w = __shfl_xor_sync(FULL_MASK, v, o);
    v = w > v ? w : v;
  }
  return v;
#endif
}

// block_sum returns the sum of v over the block to every thread. Every
// thread of the block must call it (it synchronizes). The summation order
// is fixed, so results are deterministic.
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float red_f[32];
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // red_f may still be read by a previous call
  if (lane == 0) red_f[w] = v;
  __syncthreads();
  v = lane < nw ? red_f[lane] : 0.f;
  return warp_sum(v);
}

__device__ __forceinline__ float block_max(float v) {
  __shared__ float red_m[32];
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) red_m[w] = v;
  __syncthreads();
  v = lane < nw ? red_m[lane] : -INFINITY;
  return warp_max(v);
}

__device__ __forceinline__ unsigned long long block_sum_u64(unsigned long long v) {
  __shared__ unsigned long long red_u[32];
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
  v = warp_sum_u64(v);
  __syncthreads();
  if (lane == 0) red_u[w] = v;
  __syncthreads();
  v = lane < nw ? red_u[lane] : 0ull;
  return warp_sum_u64(v);
}

__device__ __forceinline__ unsigned long long block_max_u64(unsigned long long v) {
  __shared__ unsigned long long red_x[32];
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
  v = warp_max_u64(v);
  __syncthreads();
  if (lane == 0) red_x[w] = v;
  __syncthreads();
  v = lane < nw ? red_x[lane] : 0ull;
  return warp_max_u64(v);
}

// Grid-stride loop over [0, n) with 64-bit indices.
#define GRID_STRIDE(i, n)                                                   \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;      \
       i < (long long)(n); i += (long long)blockDim.x * gridDim.x)
