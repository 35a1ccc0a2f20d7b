// attn_tc.cuh: what the tensor-core attention kernels share (attn_tc.cu
// forward, attn_tc_bwd.cu backward): tile sizes, the swizzled shared-memory
// layout, the row packing and the chunk merge.
#pragma once
#include <climits>

#include "tc.cuh"

#define ATC_BM 64    // rows per block (4 warps × 16)
#define ATC_BK 32    // keys per tile
#define ATC_KC 256   // keys per chunk (fixed positions)
#define ATC_THREADS 128

// attc_swz is the element offset of (row, col) in a [rows][D] bf16 tile
// whose 16-byte chunks are XOR-swizzled with the row.
template <int D>
__device__ __forceinline__ int attc_swz(int row, int col) {
  constexpr int CH = D / 8, MASK = (CH < 8 ? CH : 8) - 1;
  return row * D + (((col >> 3) ^ (row & MASK)) << 3) + (col & 7);
}

// attc_merge folds a chunk's partial (m, l, o[n]) into the running (M, L,
// O[n]) of one row. Written with _rn operations so that nvcc contracts
// nothing: training and the decode combine compute the same bits.
__device__ __forceinline__ void attc_factors(float M, float m, float* a, float* b, float* Mn) {
  float mx = fmaxf(M, m);
  *Mn = mx;
  *a = (M == -INFINITY) ? 0.f : expf(M - mx);
  *b = (m == -INFINITY) ? 0.f : expf(m - mx);
}
__device__ __forceinline__ float attc_mix(float X, float a, float x, float b) {
  return __fadd_rn(__fmul_rn(X, a), __fmul_rn(x, b));
}

// attc_row resolves the block's row r: its q/out row index (or -1) and
// the keys it sees, [lo, hi).
__device__ __forceinline__ long long attc_row(int r, int b, int i0, int g0, int hk, int gb, int bq, int Tq, int Hq,
                                              int G, int qpos, int klen, const int* kstart, int* lo, int* hi) {
  int i = i0 + r / gb, g = g0 + r % gb;
  *lo = 0;
  *hi = 0;
  if (r >= gb * bq || i >= Tq || g >= G) return -1;
  *hi = min(klen, qpos + i + 1);
  if (kstart) *lo = kstart[b * Tq + i];
  return ((long long)b * Tq + i) * Hq + hk * G + g;
}


// attc_fill_passes writes, for the block's query positions ii < bq, the
// row's first key (kstart, or 0) and its key end min(klen, qpos+i+1);
// INT_MAX past Tq. The caller syncs before attc_next_pass reads them.
__device__ __forceinline__ void attc_fill_passes(int* ks_s, int* hi_s, int b, int i0, int bq, int Tq, int qpos,
                                                 int klen, const int* kstart) {
  for (int ii = threadIdx.x; ii < bq; ii += blockDim.x) {
    int i = i0 + ii;
    ks_s[ii] = i < Tq ? (kstart ? kstart[b * Tq + i] : 0) : INT_MAX;
    hi_s[ii] = i < Tq ? min(klen, qpos + i + 1) : 0;
  }
}

// attc_next_pass returns the smallest first key above prev among the n
// positions (INT_MAX when none is left) and, in *kend, the largest key end
// of the positions that start there: a pass over [that key, *kend).
// Every thread computes the same values from shared memory.
__device__ __forceinline__ int attc_next_pass(const int* ks_s, const int* hi_s, int n, int prev, int* kend) {
  int ks = INT_MAX, e = 0;
  for (int ii = 0; ii < n; ii++) {
    int x = ks_s[ii];
    if (x <= prev || x > ks) continue;
    if (x < ks) ks = x, e = 0;
    e = max(e, hi_s[ii]);
  }
  *kend = e;
  return ks;
}
