// logprobs.cu: fused log-softmax + gather over the vocabulary
// (kernels.RefLogProbs, kernels.RefLogProbsBackward). logits, dlogits
// [N,V]; lp, lse, ent, dlp [N]; targets [N] (< 0: no target; validated < V
// by the host). No probability tensor is ever stored: the forward makes one
// pass over each row with an online max/sum, the backward recomputes
// exp(logit - lse) elementwise. Each kernel has a twin (_bf16) that reads
// bf16 logits directly (the bf16 modes' stashed logits), so no N×V f32
// copy is made; arithmetic stays f32.
//
// Rows longer than LP_CHUNK (a real vocabulary: 151,936 for Qwen2.5) are
// read in vocabulary chunks: logprobs_chunk runs one block per (row,
// chunk), each keeping the online state (max, Σe, Σe·(l-max)) of its
// LP_CHUNK logits, and logprobs_combine merges a row's chunk states in a
// fixed order. A decode step's few rows then fill the GPU (N·ceil(V/LP_CHUNK)
// blocks instead of N), every block has the same size whatever V is, and a
// row's result does not depend on N (decoding and training agree bit for
// bit). V ≤ LP_CHUNK stays one block per row (logprobs_fwd).
//
// Bytes: forward reads N·V·e (e = 4 f32, 2 bf16) once plus N·12 partial
// bytes per chunk written and read back; backward reads N·V·e and writes
// N·V·4. FLOPs: about 5 per logit and one expf, forward and backward.
#include "common.cuh"

// LP_CHUNK logits per block of LP_CHUNK_THREADS threads (16 each); the host
// (ops_nn.go lpChunk) uses the same numbers.
#define LP_CHUNK 4096
#define LP_CHUNK_THREADS 256  // the chunk kernels' __launch_bounds__

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

// sm_thread is the online state of this thread's logits of row[v0, v1)
// (a block-stride loop).
template <class T>
__device__ __forceinline__ SoftmaxAcc sm_thread(const T* row, int v0, int v1) {
  SoftmaxAcc a = {-INFINITY, 0.f, 0.f};
  for (int v = v0 + threadIdx.x; v < v1; v += blockDim.x) {
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
  return a;
}

// sm_block is the state of the whole block's thread states, in thread 0.
__device__ __forceinline__ SoftmaxAcc sm_block(SoftmaxAcc a) {
  __shared__ float red[3][32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
  a = sm_warp(a);
  if (lane == 0) {
    red[0][w] = a.m;
    red[1][w] = a.s;
    red[2][w] = a.t;
  }
  __syncthreads();
  SoftmaxAcc b = {-INFINITY, 0.f, 0.f};
  if (w == 0) {
    if (lane < nw) {
      b.m = red[0][lane];
      b.s = red[1][lane];
      b.t = red[2][lane];
    }
    b = sm_warp(b);
  }
  return b;
}

// logprobs_finish writes row n's results from its state b.
template <class T>
__device__ __forceinline__ void logprobs_finish(float* lp, float* lse, float* ent, const T* row, const int* targets,
                                                int n, SoftmaxAcc b, int want_ent) {
  float ls = logf(b.s);
  float L = b.m + ls;
  lse[n] = L;
  int t = targets[n];
  lp[n] = t >= 0 ? lp_ld(row, t) - L : 0.f;
  if (want_ent) ent[n] = ls - b.t / b.s;
}

// logprobs_fwd: one block per row n (grid N).
//
//	lse[n] = log Σ_v exp(logits[n,v]); lp[n] = logits[n,t] - lse[n] (0 if t < 0)
//	ent[n] = -Σ_v p log p (when want_ent)
template <class T>
__device__ __forceinline__ void logprobs_fwd_impl(float* lp, float* lse, float* ent, const T* logits,
                                                  const int* targets, int N, int V, int want_ent) {
  const int n = blockIdx.x;
  const T* row = logits + (long long)n * V;
  SoftmaxAcc b = sm_block(sm_thread(row, 0, V));
  if (threadIdx.x == 0) logprobs_finish(lp, lse, ent, row, targets, n, b, want_ent);
}

extern "C" __global__ void __launch_bounds__(1024) logprobs_fwd(float* lp, float* lse, float* ent, const float* logits,
                                        const int* targets, int N, int V, int want_ent) {
  logprobs_fwd_impl(lp, lse, ent, logits, targets, N, V, want_ent);
}

extern "C" __global__ void __launch_bounds__(1024) logprobs_fwd_bf16(float* lp, float* lse, float* ent, const bf16_t* logits,
                                             const int* targets, int N, int V, int want_ent) {
  logprobs_fwd_impl(lp, lse, ent, logits, targets, N, V, want_ent);
}

// logprobs_chunk: grid (nc, min(N, 65535)), block LP_CHUNK_THREADS; block (c, y) writes,
// for rows n = y, y + gridDim.y, ...,
// the online state of logits[n, c*LP_CHUNK .. min(V, (c+1)*LP_CHUNK)) to
// part[(n*nc + c)*3 + {0,1,2}] = max, Σe, Σe·(l-max).
template <class T>
__device__ __forceinline__ void logprobs_chunk_impl(float* part, const T* logits, int N, int V, int nc) {
  const int c = blockIdx.x, v0 = c * LP_CHUNK, v1 = min(V, v0 + LP_CHUNK);
  for (int n = blockIdx.y; n < N; n += gridDim.y) {  // grid y is capped at 65535 rows
    SoftmaxAcc b = sm_block(sm_thread(logits + (long long)n * V, v0, v1));
    if (threadIdx.x == 0) {
      float* p = part + ((long long)n * nc + c) * 3;
      p[0] = b.m;
      p[1] = b.s;
      p[2] = b.t;
    }
    __syncthreads();  // warp 0 has read the shared partials before the next row writes them
  }
}

extern "C" __global__ void __launch_bounds__(256) logprobs_chunk(float* part, const float* logits, int N, int V,
                                                                              int nc) {
  logprobs_chunk_impl(part, logits, N, V, nc);
}

extern "C" __global__ void __launch_bounds__(256) logprobs_chunk_bf16(float* part, const bf16_t* logits, int N,
                                                                                   int V, int nc) {
  logprobs_chunk_impl(part, logits, N, V, nc);
}

// logprobs_combine: one warp per row n (grid N, block 32): lane l merges
// chunks l, l+32, ... in order, then the lanes' states merge by the
// butterfly; lane 0 writes lse, lp and ent as logprobs_fwd does.
template <class T>
__device__ __forceinline__ void logprobs_combine_impl(float* lp, float* lse, float* ent, const float* part, const T* logits,
                                                      const int* targets, int N, int V, int nc, int want_ent) {
  const int n = blockIdx.x, lane = threadIdx.x;
  SoftmaxAcc a = {-INFINITY, 0.f, 0.f};
  for (int c = lane; c < nc; c += 32) {
    const float* p = part + ((long long)n * nc + c) * 3;
    SoftmaxAcc b = {p[0], p[1], p[2]};
    a = sm_combine(a, b);
  }
  a = sm_warp(a);
  if (lane == 0) logprobs_finish(lp, lse, ent, logits + (long long)n * V, targets, n, a, want_ent);
}

extern "C" __global__ void __launch_bounds__(32) logprobs_combine(float* lp, float* lse, float* ent, const float* part,
                                                                  const float* logits, const int* targets, int N, int V,
                                                                  int nc, int want_ent) {
  logprobs_combine_impl(lp, lse, ent, part, logits, targets, N, V, nc, want_ent);
}

extern "C" __global__ void __launch_bounds__(32) logprobs_combine_bf16(float* lp, float* lse, float* ent, const float* part,
                                                                       const bf16_t* logits, const int* targets, int N,
                                                                       int V, int nc, int want_ent) {
  logprobs_combine_impl(lp, lse, ent, part, logits, targets, N, V, nc, want_ent);
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
