// rope.cu: rotary embeddings in the rotate-half layout (kernels.RefRoPE),
// and the fused decode prologue rope_kv (kernels.RefBiasRoPEKV).
// x, out [N,H,D]; cos, sin [P, D/2]; pos [N] (validated < P by the host).
#include "common.cuh"

// rope_rot rotates one pair (x0, x1) by the angle whose cosine and sine are
// c and s, with IEEE operations nvcc never contracts into FMAs: every
// kernel that rotates (rope, rope_kv) gives the same bits.
//
//	y0 = x0*c - x1*s;  y1 = x1*c + x0*s
__device__ __forceinline__ void rope_rot(float x0, float x1, float c, float s, float* y0, float* y1) {
  *y0 = __fadd_rn(__fmul_rn(x0, c), -__fmul_rn(x1, s));
  *y1 = __fadd_rn(__fmul_rn(x1, c), __fmul_rn(x0, s));
}

// rope: one thread per (n, h, i < D/2); out may alias x (each thread reads
// its pair before writing it). inverse != 0 rotates by -angle (backward).
//
//	out[i] = x[i]*cos - x[i+D/2]*sin;  out[i+D/2] = x[i+D/2]*cos + x[i]*sin
extern "C" __global__ void __launch_bounds__(256) rope(float* out, const float* x, const float* cos_t, const float* sin_t,
                                const int* pos, int N, int H, int D, int inverse) {
  int half = D / 2;
  GRID_STRIDE(idx, (long long)N * H * half) {
    int i = (int)(idx % half);
    long long nh = idx / half;
    int n = (int)(nh / H);
    long long t = (long long)pos[n] * half + i;
    float c = cos_t[t], s = sin_t[t];
    if (inverse) s = -s;
    float x0 = x[nh * D + i], x1 = x[nh * D + i + half], y0, y1;
    rope_rot(x0, x1, c, s, &y0, &y1);
    out[nh * D + i] = y0;
    out[nh * D + i + half] = y1;
  }
}

// rope_kv: the fused attention prologue of a decode step
// (kernels.RefBiasRoPEKV): q/k/v bias, RoPE of q and k, and the write of k
// and v into the paged cache, one launch instead of seven (3 add_bias, 2
// rope, 2 kv_scatter). One thread per (n, head, i < D/2) over the Hq query,
// Hkv key and Hkv value heads of each row; meta = pos[N], page[N], off[N].
//
//	q head:  qo[n,h,i], qo[n,h,i+D/2] = rot(q[n,h,·] + qb[h,·])
//	k head:  kc[page,off,h,·] = rot(k[n,h,·] + kb[h,·])
//	v head:  vc[page,off,h,·] = v[n,h,·] + vb[h,·]
//
// The bias adds and rope_rot are the exact operations of add_bias and rope,
// and a bf16 cache rounds as kv_scatter_bf16 does, so results are bit-
// identical to the unfused sequence. Bytes per row: reads (Hq+2·Hkv)·D·4
// (+ the biases and D/2 cos/sin pairs, cached), writes Hq·D·4 +
// 2·Hkv·D·e (e = 4 f32 or 2 bf16 cache); the unfused sequence moves the q
// and k rows through memory three more times and v once more. FLOPs per row:
// (Hq+2·Hkv)·D bias adds + 3·(Hq+Hkv)·D for the rotations.
__device__ __forceinline__ void kv_st(float* p, float x) { *p = x; }
__device__ __forceinline__ void kv_st(bf16_t* p, float x) { *p = f32_to_bf16(x); }

template <class KV>
__device__ __forceinline__ void rope_kv_impl(float* qo, KV* kc, KV* vc, const float* q, const float* k, const float* v,
                                             const float* qb, const float* kb, const float* vb, const float* cos_t,
                                             const float* sin_t, const int* meta, int N, int Hq, int Hkv, int D,
                                             int Tmax) {
  const int half = D / 2, H = Hq + 2 * Hkv;
  GRID_STRIDE(idx, (long long)N * H * half) {
    int i = (int)(idx % half);
    long long nh = idx / half;
    int h = (int)(nh % H), n = (int)(nh / H);
    const float *src, *b;
    if (h < Hq) {
      src = q + ((long long)n * Hq + h) * D;
      b = qb ? qb + (long long)h * D : nullptr;
    } else if (h < Hq + Hkv) {
      src = k + ((long long)n * Hkv + (h - Hq)) * D;
      b = kb ? kb + (long long)(h - Hq) * D : nullptr;
    } else {
      src = v + ((long long)n * Hkv + (h - Hq - Hkv)) * D;
      b = vb ? vb + (long long)(h - Hq - Hkv) * D : nullptr;
    }
    float x0 = src[i], x1 = src[i + half];
    if (b) {
      x0 = x0 + b[i];
      x1 = x1 + b[i + half];
    }
    if (h < Hq + Hkv) {
      long long t = (long long)meta[n] * half + i;
      float y0, y1;
      rope_rot(x0, x1, cos_t[t], sin_t[t], &y0, &y1);
      x0 = y0;
      x1 = y1;
    }
    if (h < Hq) {
      float* o = qo + ((long long)n * Hq + h) * D;
      o[i] = x0;
      o[i + half] = x1;
      continue;
    }
    KV* c = h < Hq + Hkv ? kc : vc;
    int hk = h < Hq + Hkv ? h - Hq : h - Hq - Hkv;
    KV* o = c + (((long long)meta[N + n] * Tmax + meta[2 * N + n]) * Hkv + hk) * D;
    kv_st(o + i, x0);
    kv_st(o + i + half, x1);
  }
}

extern "C" __global__ void __launch_bounds__(256) rope_kv(float* qo, float* kc, float* vc, const float* q, const float* k,
                                                          const float* v, const float* qb, const float* kb, const float* vb,
                                                          const float* cos_t, const float* sin_t, const int* meta, int N,
                                                          int Hq, int Hkv, int D, int Tmax) {
  rope_kv_impl(qo, kc, vc, q, k, v, qb, kb, vb, cos_t, sin_t, meta, N, Hq, Hkv, D, Tmax);
}

extern "C" __global__ void __launch_bounds__(256) rope_kv_bf16(float* qo, bf16_t* kc, bf16_t* vc, const float* q,
                                                               const float* k, const float* v, const float* qb,
                                                               const float* kb, const float* vb, const float* cos_t,
                                                               const float* sin_t, const int* meta, int N, int Hq,
                                                               int Hkv, int D, int Tmax) {
  rope_kv_impl(qo, kc, vc, q, k, v, qb, kb, vb, cos_t, sin_t, meta, N, Hq, Hkv, D, Tmax);
}
