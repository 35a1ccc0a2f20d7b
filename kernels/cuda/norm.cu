// norm.cu: RMSNorm forward and backward (kernels.RefRMSNorm,
// kernels.RefRMSNormBackward). x, out, dx [N,C]; w, dw [C]; rstd [N].
#include "common.cuh"

// rmsnorm_fwd: one block per row n (grid N).
//
//	rstd[n] = 1/sqrt(mean_c x[n,c]^2 + eps); out[n,c] = x[n,c]*rstd[n]*w[c]
//
// Bytes per row: reads x twice (the second read mostly from L1/L2) and w,
// writes C·e (e = 4 f32, 2 bf16) + 4. FLOPs: 4·C. The _bf16 twin writes
// the bf16 GEMM input directly (each element rounded to nearest even, the
// same bits as rmsnorm_fwd then f32_to_bf16_kernel) so the bf16 modes skip
// an N×C f32 write, a cast kernel and its read.
__device__ __forceinline__ void norm_st(float* p, float x) { *p = x; }
__device__ __forceinline__ void norm_st(bf16_t* p, float x) { *p = f32_to_bf16(x); }

template <class O>
__device__ __forceinline__ void rmsnorm_fwd_impl(O* out, float* rstd, const float* x, const float* w, int N, int C,
                                                 float eps) {
  int n = blockIdx.x;
  const float* xr = x + (long long)n * C;
  float ss = 0.f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float v = xr[c];
    ss += v * v;
  }
  ss = block_sum(ss);
  float r = 1.f / sqrtf(ss / (float)C + eps);
  // every thread has read its x values before any writes out (out may alias x)
  O* orow = out + (long long)n * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) norm_st(orow + c, xr[c] * r * w[c]);
  if (threadIdx.x == 0) rstd[n] = r;
}

extern "C" __global__ void __launch_bounds__(1024) rmsnorm_fwd(float* out, float* rstd, const float* x, const float* w,
                                       int N, int C, float eps) {
  rmsnorm_fwd_impl(out, rstd, x, w, N, C, eps);
}

extern "C" __global__ void __launch_bounds__(1024) rmsnorm_fwd_bf16(bf16_t* out, float* rstd, const float* x, const float* w,
                                            int N, int C, float eps) {
  rmsnorm_fwd_impl(out, rstd, x, w, N, C, eps);
}

// rmsnorm_bwd_dx: one block per row n (grid N).
//
//	dot = Σ_c dout[n,c]*w[c]*x[n,c]
//	dx[n,c] = r*w[c]*dout[n,c] - x[n,c]*r^3*dot/C
extern "C" __global__ void __launch_bounds__(1024) rmsnorm_bwd_dx(float* dx, const float* dout, const float* x, const float* w,
                                          const float* rstd, int N, int C) {
  int n = blockIdx.x;
  long long off = (long long)n * C;
  float dot = 0.f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) dot += dout[off + c] * w[c] * x[off + c];
  dot = block_sum(dot);
  float r = rstd[n];
  float k = r * r * r * dot / (float)C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) dx[off + c] = r * w[c] * dout[off + c] - x[off + c] * k;
}

// rmsnorm_bwd_dw_partial: grid (ceil(C/blockDim), P); block y sums rows
// [y*R, min(N,(y+1)*R)) of dout*x*rstd for its columns into partial[y, c].
// sum_rows_partial over the P partial rows then gives dw (deterministic: no
// atomics).
extern "C" __global__ void __launch_bounds__(256) rmsnorm_bwd_dw_partial(float* partial, const float* dout, const float* x,
                                                  const float* rstd, int N, int C, int R) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  int n0 = blockIdx.y * R, n1 = min(N, n0 + R);
  float s = 0.f;
  for (int n = n0; n < n1; n++) s += dout[(long long)n * C + c] * x[(long long)n * C + c] * rstd[n];
  partial[(long long)blockIdx.y * C + c] = s;
}
