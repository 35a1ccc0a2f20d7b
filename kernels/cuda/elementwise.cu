// elementwise.cu: elementwise ops, reductions, dropout and dtype conversion
// (kernels.RefAXPBY, RefMul, RefAddBias, RefSumRows, RefDot, RefDropout).
// Reductions are two-pass with a fixed grid, so they are deterministic.
#include "common.cuh"

// axpby: out = alpha*a + beta*b; b is not read when beta == 0 (may be null).
extern "C" __global__ void __launch_bounds__(256) axpby(float* out, const float* a, const float* b, float alpha, float beta, long long n) {
  GRID_STRIDE(i, n) {
    float r = alpha * a[i];
    if (beta != 0.f) r += beta * b[i];
    out[i] = r;
  }
}

// mul: out = a*b.
extern "C" __global__ void __launch_bounds__(256) mul(float* out, const float* a, const float* b, long long n) {
  GRID_STRIDE(i, n) { out[i] = a[i] * b[i]; }
}

// add_bias: out[n,c] = x[n,c] + bias[c].
extern "C" __global__ void __launch_bounds__(256) add_bias(float* out, const float* x, const float* bias, int N, int C) {
  GRID_STRIDE(i, (long long)N * C) { out[i] = x[i] + bias[i % C]; }
}

// sum_rows_partial: grid (ceil(C/blockDim), P); block y sums rows
// [y*R, min(N,(y+1)*R)) of x [N,C] into partial[y, c]. With P = 1 this is
// SumRows itself; otherwise a second call with R = P reduces the partials.
extern "C" __global__ void __launch_bounds__(256) sum_rows_partial(float* partial, const float* x, int N, int C, int R) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  int n0 = blockIdx.y * R, n1 = min(N, n0 + R);
  float s = 0.f;
  for (int n = n0; n < n1; n++) s += x[(long long)n * C + c];
  partial[(long long)blockIdx.y * C + c] = s;
}

// dot_partial: block x writes partial[x] = Σ a[i]*b[i] over its grid-stride
// share. reduce_sum then adds the gridDim.x partials.
extern "C" __global__ void __launch_bounds__(256) dot_partial(float* partial, const float* a, const float* b, long long n) {
  float s = 0.f;
  GRID_STRIDE(i, n) { s += a[i] * b[i]; }
  s = block_sum(s);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// reduce_sum: one block; out[0] = Σ_{i<n} x[i].
extern "C" __global__ void __launch_bounds__(1024) reduce_sum(float* out, const float* x, int n) {
  float s = 0.f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[i];
  s = block_sum(s);
  if (threadIdx.x == 0) out[0] = s;
}

// dropout_uniform is kernels.DropoutUniform: splitmix64(seed + i*golden),
// top 24 bits / 2^24.
__device__ __forceinline__ float dropout_uniform(unsigned long long seed, long long i) {
  unsigned long long z = seed + (unsigned long long)i * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (float)(z >> 40) * (1.f / 16777216.f);
}

// dropout: out[i] = keep(i) ? x[i]/(1-p) : 0, keep(i) = uniform(seed,i) >= p;
// p >= 1 drops everything.
extern "C" __global__ void __launch_bounds__(256) dropout(float* out, const float* x, long long n, float p, unsigned long long seed) {
  float scale = p < 1.f ? 1.f / (1.f - p) : 0.f;
  GRID_STRIDE(i, n) { out[i] = (p < 1.f && dropout_uniform(seed, i) >= p) ? x[i] * scale : 0.f; }
}

// bf16_to_f32: exact widening.
extern "C" __global__ void __launch_bounds__(256) bf16_to_f32_kernel(float* out, const bf16_t* in, long long n) {
  GRID_STRIDE(i, n) { out[i] = bf16_to_f32(in[i]); }
}

// f32_to_bf16: round to nearest even.
extern "C" __global__ void __launch_bounds__(256) f32_to_bf16_kernel(bf16_t* out, const float* in, long long n) {
  GRID_STRIDE(i, n) { out[i] = f32_to_bf16(in[i]); }
}
