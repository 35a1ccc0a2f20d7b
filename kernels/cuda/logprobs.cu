// logprobs.cu: fused log-softmax + gather over the vocabulary
// (kernels.RefLogProbs, kernels.RefLogProbsBackward). logits, dlogits
// [N,V]; lp, lse, ent, dlp [N]; targets [N] (< 0: no target; validated < V
// by the host). No probability tensor is ever stored: the forward makes one
// pass over each row with an online max/sum, the backward recomputes
// exp(logit - lse) elementwise. Each kernel has a twin (_bf16) that reads
// bf16 logits directly (the bf16 modes' stashed logits), so no N×V f32
// copy is made; arithmetic stays f32.
#include "common.cuh"

__device__ __forceinline__ float lp_ld(const float* p, long long i) { return p[i]; }
__device__ __forceinline__ float lp_ld(const bf16_t* p, long long i) { return bf16_to_f32(p[i]); }

// Online softmax state of a set of logits relative to its max m:
// s = Σ e^(l-m), t = Σ e^(l-m)·(l-m). Entropy = log s - t/s.
struct SoftmaxAcc {
  float m, s, t;
};

__device__ __forceinline__ SoftmaxAcc sm_combine(SoftmaxAcc a, SoftmaxAcc b) {
  if (a.m == -INFINITY) return b;
  if (b.m == -INFINITY) return a;
  SoftmaxAcc r;
  r.m = fmaxf(a.m, b.m);
  float da = a.m - r.m, db = b.m - r.m;  // <= 0
  float ea = expf(da), eb = expf(db);
  r.s = a.s * ea + b.s * eb;
  r.t = ea * (a.t + da * a.s) + eb * (b.t + db * b.s);
  return r;
}

__device__ __forceinline__ SoftmaxAcc sm_shfl(SoftmaxAcc a, int o) {
  SoftmaxAcc b;
  b.m = __shfl_xor_sync(FULL_MASK, a.m, o);
  b.s = __shfl_xor_sync(FULL_MASK, a.s, o);
  b.t = __shfl_xor_sync(FULL_MASK, a.t, o);
  return b;
}

// sm_warp combines the states of the warp's lanes (an xor butterfly).
__device__ __forceinline__ SoftmaxAcc sm_warp(SoftmaxAcc a) {
#if defined(ARGRL_EMU)
  return emu::warp_butterfly(__LINE__, a, [](SoftmaxAcc x, SoftmaxAcc y) { return sm_combine(x, y); });
#else
  for (int o = 16; o > 0; o >>= 1) a = sm_combine(a, sm_shfl(a, o));
  return a;
#endif
}

// logprobs_fwd: one block per row n (grid N).
//
//	lse[n] = log Σ_v exp(logits[n,v]); lp[n] = logits[n,t] - lse[n] (0 if t < 0)
//	ent[n] = -Σ_v p log p (when want_ent)
template <class T>
__device__ __forceinline__ void logprobs_fwd_impl(float* lp, float* lse, float* ent, const T* logits,
                                                  const int* targets, int N, int V, int want_ent) {
  __shared__ float red[3][32];
  const int n = blockIdx.x, lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const T* row = logits + (long long)n * V;
  SoftmaxAcc a = {-INFINITY, 0.f, 0.f};
  for (int v = threadIdx.x; v < V; v += blockDim.x) {
    float x = lp_ld(row, v);
    if (x > a.m) {  // new running max: rescale what was summed so far
      if (a.m == -INFINITY) {
        a.s = 1.f;
        a.t = 0.f;
      } else {
        float d = a.m - x, e = expf(d);
        a.t = e * (a.t + d * a.s);
        a.s = a.s * e + 1.f;
      }
      a.m = x;
    } else if (x != -INFINITY) {
      float d = x - a.m, e = expf(d);
      a.s += e;
      a.t += e * d;
    }
  }
  a = sm_warp(a);
  if (lane == 0) {
    red[0][w] = a.m;
    red[1][w] = a.s;
    red[2][w] = a.t;
  }
  __syncthreads();
  if (w == 0) {
    SoftmaxAcc b = {-INFINITY, 0.f, 0.f};
    if (lane < nw) {
      b.m = red[0][lane];
      b.s = red[1][lane];
      b.t = red[2][lane];
    }
    b = sm_warp(b);
    if (lane == 0) {
      float ls = logf(b.s);
      float L = b.m + ls;
      lse[n] = L;
      int t = targets[n];
      lp[n] = t >= 0 ? lp_ld(row, t) - L : 0.f;
      if (want_ent) ent[n] = ls - b.t / b.s;
    }
  }
}

extern "C" __global__ void __launch_bounds__(1024) logprobs_fwd(float* lp, float* lse, float* ent, const float* logits,
                                        const int* targets, int N, int V, int want_ent) {
  logprobs_fwd_impl(lp, lse, ent, logits, targets, N, V, want_ent);
}

extern "C" __global__ void __launch_bounds__(1024) logprobs_fwd_bf16(float* lp, float* lse, float* ent, const bf16_t* logits,
                                             const int* targets, int N, int V, int want_ent) {
  logprobs_fwd_impl(lp, lse, ent, logits, targets, N, V, want_ent);
}

// logprobs_bwd: elementwise over N*V.
//
//	dlogits[n,v] = dlp[n]*(1[v==t] - exp(logits[n,v]-lse[n])), 0 if t < 0
template <class T>
__device__ __forceinline__ void logprobs_bwd_impl(float* dlogits, const float* dlp, const T* logits, const float* lse,
                                                  const int* targets, int N, int V) {
  GRID_STRIDE(i, (long long)N * V) {
    int n = (int)(i / V), v = (int)(i % V), t = targets[n];
    float r = 0.f;
    if (t >= 0) {
      r = -dlp[n] * expf(lp_ld(logits, i) - lse[n]);
      if (v == t) r += dlp[n];
    }
    dlogits[i] = r;
  }
}

extern "C" __global__ void __launch_bounds__(256) logprobs_bwd(float* dlogits, const float* dlp, const float* logits, const float* lse,
                                        const int* targets, int N, int V) {
  logprobs_bwd_impl(dlogits, dlp, logits, lse, targets, N, V);
}

extern "C" __global__ void __launch_bounds__(256) logprobs_bwd_bf16(float* dlogits, const float* dlp, const bf16_t* logits, const float* lse,
                                             const int* targets, int N, int V) {
  logprobs_bwd_impl(dlogits, dlp, logits, lse, targets, N, V);
}
