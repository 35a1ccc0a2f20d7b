// selftest.cu: kernels for testing the emulator itself (compiled into the
// emulator only, never into the PTX). Some are deliberately wrong: the
// emulator must report or expose each bug.
#include "../common.cuh"

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
