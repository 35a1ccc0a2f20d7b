// sample.cu: temperature / top-k / top-p sampling on device
// (kernels.RefSample). logits [N,V]; u [N] uniforms in [0,1); ids [N].
//
// Rank order (probability descending, lower id first on ties) is the
// descending order of the 64-bit key (order-preserving bits of the logit,
// then ~id), so every element has a distinct key. Probabilities are carried
// as fixed-point integers w = round(exp((l-max)/T)·2^40), which makes every
// sum exact and order-independent (deterministic integer atomics). Each
// "find the first ranked element whose cumulative weight exceeds x" is a
// radix select over the key, 8 bits per pass; no sort, no V-sized scratch.
#include "common.cuh"

__device__ __forceinline__ unsigned long long sample_key(float x, int v) {
  unsigned u = __float_as_uint(x);
  u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return ((unsigned long long)u << 32) | (unsigned long long)(0xffffffffu - (unsigned)v);
}

__device__ __forceinline__ int sample_id(unsigned long long key) {
  return (int)(0xffffffffu - (unsigned)(key & 0xffffffffull));
}

// sample_weight is exp((x-m)/T) in units of 2^-40 (0 below ~1e-12).
__device__ __forceinline__ unsigned long long sample_weight(float x, float m, float invT) {
  float e = expf((x - m) * invT);
  return (unsigned long long)(e * 1099511627776.0f);
}

// sample_select returns the key of the first element in rank order, among
// keys >= lo, whose inclusive cumulative weight exceeds x (weight 1 per
// element when count != 0). Every thread of the block calls it and gets
// the same key; x must be below the total weight of the candidates.
__device__ unsigned long long sample_select(const float* row, int V, float m, float invT, unsigned long long lo,
                                            unsigned long long x, int count) {
  __shared__ unsigned long long hist[256];
  __shared__ unsigned long long sel_prefix, sel_acc;
  unsigned long long prefix = 0, hi = 0, acc = 0;
  for (int shift = 56; shift >= 0; shift -= 8) {
    for (int i = threadIdx.x; i < 256; i += blockDim.x) hist[i] = 0;
    __syncthreads();
    for (int v = threadIdx.x; v < V; v += blockDim.x) {
      float xv = row[v];
      unsigned long long key = sample_key(xv, v);
      if (key < lo || (key & hi) != prefix) continue;
      atomicAdd(&hist[(key >> shift) & 255], count ? 1ull : sample_weight(xv, m, invT));
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      int d = 255;
      for (; d > 0; d--) {
        if (acc + hist[d] > x) break;
        acc += hist[d];
      }
      sel_prefix = prefix | ((unsigned long long)d << shift);
      sel_acc = acc;
    }
    __syncthreads();
    prefix = sel_prefix;
    acc = sel_acc;
    hi |= 255ull << shift;
  }
  return prefix;
}

// sample_mass is the total weight of the keys >= lo.
__device__ unsigned long long sample_mass(const float* row, int V, float m, float invT, unsigned long long lo) {
  unsigned long long s = 0;
  for (int v = threadIdx.x; v < V; v += blockDim.x) {
    float xv = row[v];
    if (sample_key(xv, v) >= lo) s += sample_weight(xv, m, invT);
  }
  return block_sum_u64(s);
}

// sample_rows: one block per row (grid N). greedy != 0 is Temperature 0
// (argmax, lowest id on ties). Otherwise keep the top-k (topk in (0,V)),
// then the shortest prefix holding topp of the kept mass (topp in (0,1)),
// and return the first kept element whose cumulative mass exceeds u·total.
extern "C" __global__ void __launch_bounds__(1024) sample_rows(int* ids, const float* logits, const float* u, int N, int V, float invT,
                                       int greedy, int topk, float topp) {
  const int n = blockIdx.x;
  const float* row = logits + (long long)n * V;
  if (greedy) {
    unsigned long long best = 0;
    for (int v = threadIdx.x; v < V; v += blockDim.x) {
      unsigned long long key = sample_key(row[v], v);
      best = key > best ? key : best;
    }
    best = block_max_u64(best);
    if (threadIdx.x == 0) ids[n] = sample_id(best);
    return;
  }
  float m = -INFINITY;
  for (int v = threadIdx.x; v < V; v += blockDim.x) m = fmaxf(m, row[v]);
  m = block_max(m);

  unsigned long long lo = 0;  // the kept set is {key >= lo}
  if (topk > 0 && topk < V) lo = sample_select(row, V, m, invT, 0, (unsigned long long)(topk - 1), 1);
  if (topp > 0.f && topp < 1.f) {
    // shortest prefix with mass >= topp*W  <=>  first cumulative > ceil(topp*W)-1
    unsigned long long W = sample_mass(row, V, m, invT, lo);
    unsigned long long t = (unsigned long long)ceil((double)topp * (double)W);
    lo = sample_select(row, V, m, invT, lo, t > 0 ? t - 1 : 0, 0);
  }
  unsigned long long W = sample_mass(row, V, m, invT, lo);
  unsigned long long x = (unsigned long long)((double)u[n] * (double)W);
  if (x >= W) x = W - 1;
  unsigned long long key = sample_select(row, V, m, invT, lo, x, 0);
  if (threadIdx.x == 0) ids[n] = sample_id(key);
}
