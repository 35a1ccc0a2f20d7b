// selftest.cu: kernels for testing the emulator itself (compiled into the
// emulator only, never into the PTX). Some are deliberately wrong: the
// emulator must report or expose each bug.
#include "../common.cuh"
#include "../tc.cuh"

// emu_shfl: out[4*t+k] = results of the four shuffle kinds for lane value t.
extern "C" __global__ void emu_shfl(int* out) {
  int t = threadIdx.x, lane = t & 31;
  out[4 * t + 0] = __shfl_xor_sync(FULL_MASK, t, 5);
  out[4 * t + 1] = __shfl_down_sync(FULL_MASK, t, 3);
  out[4 * t + 2] = __shfl_up_sync(FULL_MASK, t, 2);
  out[4 * t + 3] = __shfl_sync(FULL_MASK, t, (lane * 7) & 31);
}

// emu_block_sum: out[blockIdx.x] = Σ of in over the block's slice (block_sum).
extern "C" __global__ void emu_block_sum(float* out, const float* in) {
  float s = block_sum(in[blockIdx.x * blockDim.x + threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}

// emu_missing_sync: a race. Thread t reads what thread t+1 wrote to shared
// memory, with no __syncthreads in between; the result depends on the order
// the emulator runs the threads in.
extern "C" __global__ void emu_missing_sync(float* out) {
  __shared__ float s[1024];
  int t = threadIdx.x;
  s[t] = (float)t;
  out[t] = s[(t + 1) % blockDim.x];
}

// emu_divergent_sync: only half the block reaches the barrier.
extern "C" __global__ void emu_divergent_sync(float* out) {
  if (threadIdx.x < blockDim.x / 2) __syncthreads();
  out[threadIdx.x] = 1.f;
}

// emu_divergent_shfl: only half a warp takes part in a full-mask shuffle.
extern "C" __global__ void emu_divergent_shfl(float* out) {
  float v = 1.f;
  if ((threadIdx.x & 31) < 16) v = warp_sum(v);
  out[threadIdx.x] = v;
}

// emu_oob: writes one element past the end of out[n].
extern "C" __global__ void emu_oob(float* out, int n) {
  if (threadIdx.x == 0) out[n] = 1.f;
}

// emu_mma_tile: one warp, D = A·B + C for A 16×16 (row-major), B 16×8
// given twice — bk as K×N (row k holds the 8 columns) and bn as N×K (row n
// holds the 16 k) — and C 16×8. The tiles go to shared memory by cp.async
// (two groups), the fragments come from ldmatrix; out gets three products:
//   out[0:128)   A (x4) · B from bn (x2, no .trans)
//   out[128:256) A (x4) · B from bk (x2 .trans)
//   out[256:384) A (two x1 per half + x2) · B from bk (x1 .trans ×2)
// raw [32·4] gets each lane's a[] from ldmatrix_x4, for the layout check.
extern "C" __global__ void __launch_bounds__(32) emu_mma_tile(float* out, unsigned* raw, const bf16_t* a,
                                                               const bf16_t* bk, const bf16_t* bn,
                                                               const float* c) {
  __shared__ __align__(16) bf16_t as[16][16];
  __shared__ __align__(16) bf16_t bks[16][8];
  __shared__ __align__(16) bf16_t bns[8][16];
  const int l = threadIdx.x, g = l >> 2, t = l & 3;
  // A: 32 chunks of 16 bytes (8 bf16), one per lane; B in a second group
  cp_async16(&as[l >> 1][8 * (l & 1)], a + 8 * l, true);
  cp_async_commit();
  if (l < 16) cp_async16(&bks[l][0], bk + 8 * l, true);
  else cp_async16(&bns[(l - 16) >> 1][8 * (l & 1)], bn + 8 * (l - 16), true);
  cp_async_commit();
  cp_async_wait<0>();
  __syncwarp();

  float acc[4] = {c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1], c[(g + 8) * 8 + 2 * t], c[(g + 8) * 8 + 2 * t + 1]};
  unsigned af[4], b1[2], b2[2];
  ldmatrix_x4(af, &as[l & 15][8 * (l >> 4)]);
  for (int i = 0; i < 4; i++) raw[4 * l + i] = af[i];
  ldmatrix_x2(b1, &bns[l & 7][8 * ((l >> 3) & 1)]);
  ldmatrix_x2_trans(b2, &bks[l & 15][0]);
  float d[4];
  mma_bf16(d, af, b1, acc);
  for (int e = 0; e < 4; e++) out[(g + 8 * (e >> 1)) * 8 + 2 * t + (e & 1)] = d[e];
  mma_bf16(d, af, b2, acc);
  for (int e = 0; e < 4; e++) out[128 + (g + 8 * (e >> 1)) * 8 + 2 * t + (e & 1)] = d[e];

  // the same A through x1 and x2 loads, B through x1 .trans
  unsigned a0[1], a1[1], a23[2], bb0[1], bb1[1];
  ldmatrix_x1(a0, &as[l & 7][0]);
  ldmatrix_x1(a1, &as[8 + (l & 7)][0]);
  ldmatrix_x2(a23, &as[l & 15][8]);
  ldmatrix_x1_trans(bb0, &bks[l & 7][0]);
  ldmatrix_x1_trans(bb1, &bks[8 + (l & 7)][0]);
  unsigned a2[4] = {a0[0], a1[0], a23[0], a23[1]}, b3[2] = {bb0[0], bb1[0]};
  mma_bf16(d, a2, b3, acc);
  for (int e = 0; e < 4; e++) out[256 + (g + 8 * (e >> 1)) * 8 + 2 * t + (e & 1)] = d[e];
}

// emu_cp_async_groups: each of 32 lanes fills 16 bytes of each of two
// shared arrays with -1, then starts cp.async of src[0:256) into s0 (group
// 0) and src[256:512) into s1 (group 1; odd lanes zero-fill their 16 bytes).
// After wait_group 1 group 0 has landed and group 1 may not have (the
// emulator lands it only at the wait: out[512:1024) shows -1s); after
// wait_group 0 both have. out = [s0 s1 | s0 s1].
extern "C" __global__ void __launch_bounds__(32) emu_cp_async_groups(float* out, const float* src) {
  __shared__ __align__(16) float s0[128], s1[128];
  const int l = threadIdx.x;
  for (int i = 0; i < 4; i++) s0[4 * l + i] = s1[4 * l + i] = -1.f;
  __syncwarp();
  cp_async16(&s0[4 * l], src + 4 * l, true);
  cp_async_commit();
  cp_async16(&s1[4 * l], src + 128 + 4 * l, l % 2 == 0);
  cp_async_commit();
  cp_async_wait<1>();
  __syncwarp();
  for (int i = 0; i < 4; i++) {
    out[4 * l + i] = s0[4 * l + i];
    out[128 + 4 * l + i] = s1[4 * l + i];
  }
  cp_async_wait<0>();
  __syncwarp();
  for (int i = 0; i < 4; i++) {
    out[256 + 4 * l + i] = s0[4 * l + i];
    out[384 + 4 * l + i] = s1[4 * l + i];
  }
}
