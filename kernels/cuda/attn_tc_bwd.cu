// attn_tc_bwd.cu: the backward of attn_tc.cu's attention on tensor cores,
// FlashAttention-2 style: P is recomputed from the forward's lse, never
// stored. Reference: kernels.RefAttentionBackward (kernels/ref_attn.go,
// float64), run beside these kernels on every kerneltest.AttentionBF16
// shape; the emulator's tests (TestEmulatedKernels, TestEmulatedPacked-
// AttentionTC) run them at every block shape they take.
//
//	P = exp(scale·q·k − lse)   dP = dout·vᵀ   dS = P ∘ (dP − dsum)
//	dsum = Σ_d dout·out        dq = scale·dS·K   dk = scale·dSᵀ·Q   dv = Pᵀ·dout
//
// Two kernels, no atomics (deterministic): attn_tc_bwd_dq owns 64 query
// rows as the forward does (gb heads × bq positions: 1×64, 2×32, 3×21,
// 4×16, 7×9, 14×4, ... by the group size G) and streams K/V tiles of 32
// keys (cp.async, double-buffered) for S = Q·Kᵀ, dP = dO·Vᵀ and
// dQ += dS·K; it writes dsum. attn_tc_bwd_dkdv owns 64 keys of one KV head
// (16 per warp) and streams 16-query tiles of every (batch row, head of the
// group) that reads its slot for Sᵀ = K·Qᵀ, dPᵀ = V·dOᵀ, dV += Pᵀ·dO and
// dK += dSᵀ·Q. P and dS are rounded to bf16 for their products
// (accumulation in f32).
//
// Packed rows (KStart) give each sequence the bits it gets alone: dq's key
// tiles start at the row's first key (one pass per distinct first key, as
// the forward), and dkdv makes one pass per sequence whose queries see its
// keys, with the 16-query tiles counted from that sequence's first query,
// from the first query that sees one of the block's keys to the
// sequence's last: the same tiles, in the same order, as alone, and no
// tile of another sequence (attc_next_seq).
//
// FLOPs, per (query, key) pair a tile computes and query head: dq 6·D (S,
// dP, dQ), dkdv 8·D (Sᵀ, dPᵀ, dV, dK): 14·D, the five products' 10·D plus
// S and dP recomputed in the second kernel. Causal, T tokens, one head:
// pairs ≈ T²/2 plus the tiles' edges (32 keys in dq, 16 queries in dkdv).
// At the 7B shape (T = 1,536, Hq = 28, D = 128): 14·128·28·1,536·1,537/2
// = 59.2 GFLOP per layer.
//
// Bytes read and written in global memory (requests; how many of the
// re-reads the L2 serves is not measured):
//   - dq, per row and query head: q and dout in bf16 (4·D), dout and out in
//     f32 for dsum (8·D), lse (4); writes dq in f32 (4·D) and dsum (4):
//     16·D + 8. Per block of rows, K and V in bf16 (4·D) for each key the
//     block sees, shared by its gb heads.
//   - dkdv, per key and KV head: K and V in bf16 (4·D) once, dk and dv in
//     f32 (8·D). Per query row and head, q and dout in bf16 (4·D), lse and
//     dsum (8) once for every block of 64 keys the row sees: the row at
//     position i is read ⌈(i+1)/64⌉ times.
//   At the 7B shape, per layer: dq 2,056 B × 1,536 × 28 = 88 MB of rows
//   and 271 MB of K/V tiles (171 blocks of 7×9 rows per KV head, keys up
//   to each block's last position); dkdv 9.4 MB of K, V, dk, dv and 524 B ×
//   28 × Σ⌈(i+1)/64⌉ (= 19,200) = 282 MB of query tiles. About 650 MB
//   against 59.2 GFLOP: 91 FLOP/B, compute-bound on an H200 if most
//   re-reads hit the L2 (a prediction).
//
// Shared memory at D = 128: dq 32 KB (two K/V stages; Q and dO staged
// through them), dkdv 41 KB (K, V of 64 keys; one Q/dO tile; the pass
// search's 128 64-bit keys).
#include "attn_tc.cuh"

// attn_tc_bwd_dq: grid (ceil(Tq/bq), Hkv·ceil(G/gb), B), 128 threads.
// q16, k, v, dout16 bf16; dout, out, lse f32.
template <int D>
__device__ __forceinline__ void attn_tc_bwd_dq_impl(float* dq, float* dsum, const bf16_t* q, const bf16_t* k,
                                                    const bf16_t* v, const bf16_t* dout16, const float* dout,
                                                    const float* out, const float* lse, const int* meta,
                                                    const int* kstart, int B, int Tq, int Hq, int Hkv, int Tmax,
                                                    float scale, int gb, int bq) {
  constexpr int KS = D / 16, NT = ATC_BK / 8, ND = D / 8, CH = D / 8;
  __shared__ __align__(16) bf16_t sm[2][2][ATC_BK * D];
  const int G = Hq / Hkv, ngb = (G + gb - 1) / gb;
  const int b = blockIdx.z, hk = blockIdx.y / ngb, g0 = (blockIdx.y % ngb) * gb, i0 = blockIdx.x * bq;
  const int slot = meta[b], qpos = meta[B + b], klen = meta[2 * B + b];
  const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5, lg = lane >> 2, lt = lane & 3;
  __shared__ int ks_s[ATC_BM], hi_s[ATC_BM];  // passes over the rows' first keys, as in the forward
  attc_fill_passes(ks_s, hi_s, b, i0, bq, Tq, qpos, klen, kstart);

  // Q → stage 0, dO → stage 1, then both into registers
  bf16_t* qs = &sm[0][0][0];
  bf16_t* ds = &sm[1][0][0];
  for (int e = tid; e < ATC_BM * CH; e += ATC_THREADS) {
    int r = e / CH, c = e % CH, lo, hi;
    long long row = attc_row(r, b, i0, g0, hk, gb, bq, Tq, Hq, G, qpos, klen, nullptr, &lo, &hi);
    cp_async16(&qs[attc_swz<D>(r, 8 * c)], row < 0 ? q : q + row * D + 8 * c, row >= 0);
    cp_async16(&ds[attc_swz<D>(r, 8 * c)], row < 0 ? dout16 : dout16 + row * D + 8 * c, row >= 0);
  }
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  unsigned qf[KS][4], df[KS][4];
#pragma unroll
  for (int kk = 0; kk < KS; kk++) {
    int off = attc_swz<D>(16 * w + (lane & 15), 16 * kk + 8 * (lane >> 4));
    ldmatrix_x4(qf[kk], &qs[off]);
    ldmatrix_x4(df[kk], &ds[off]);
  }
  __syncthreads();

  int lo[2], hi[2];
  long long qrow[2];
  float L[2], Dsum[2];
#pragma unroll
  for (int h = 0; h < 2; h++) {
    qrow[h] = attc_row(16 * w + lg + 8 * h, b, i0, g0, hk, gb, bq, Tq, Hq, G, qpos, klen, kstart, &lo[h], &hi[h]);
    float sacc = 0.f;
    if (qrow[h] >= 0)
      for (int d = lt; d < D; d += 4) sacc += dout[qrow[h] * D + d] * out[qrow[h] * D + d];
    sacc += __shfl_xor_sync(FULL_MASK, sacc, 1);
    sacc += __shfl_xor_sync(FULL_MASK, sacc, 2);
    Dsum[h] = sacc;
    L[h] = qrow[h] >= 0 ? lse[qrow[h]] : -INFINITY;
    if (qrow[h] >= 0 && lt == 0) dsum[qrow[h]] = sacc;
  }
  float acc[ND][4];
#pragma unroll
  for (int nd = 0; nd < ND; nd++)
    for (int e = 0; e < 4; e++) acc[nd][e] = 0.f;

  // one pass per distinct first key of the block's rows, tiles at fixed
  // positions from it (the forward's order; rows outside the pass get p = 0)
  const long long kvrow = (long long)slot * Tmax;
  for (int ks = -1;;) {
    int kend;
    ks = attc_next_pass(ks_s, hi_s, bq, ks, &kend);  // block-uniform
    if (ks == INT_MAX) break;
    const bool in[2] = {qrow[0] >= 0 && lo[0] == ks, qrow[1] >= 0 && lo[1] == ks};
    auto load_tile = [&](int st, int j0) {
      for (int e = tid; e < ATC_BK * CH; e += ATC_THREADS) {
        int jj = e / CH, c = e % CH, j = j0 + jj;
        bool ok = j < kend;
        long long off = ok ? ((kvrow + j) * Hkv + hk) * D + 8 * c : 0;
        cp_async16(&sm[st][0][attc_swz<D>(jj, 8 * c)], k + off, ok);
        cp_async16(&sm[st][1][attc_swz<D>(jj, 8 * c)], v + off, ok);
      }
      cp_async_commit();
    };
    if (ks < kend) load_tile(0, ks);
    int st = 0;
    for (int j0 = ks; j0 < kend; j0 += ATC_BK, st ^= 1) {
      if (j0 + ATC_BK < kend) {
        load_tile(st ^ 1, j0 + ATC_BK);
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();
      const bf16_t* kt = &sm[st][0][0];
      const bf16_t* vs = &sm[st][1][0];
      float s[NT][4], dp[NT][4];
#pragma unroll
      for (int nt = 0; nt < NT; nt++)
        for (int e = 0; e < 4; e++) s[nt][e] = dp[nt][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < KS; kk++)
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
          int off = attc_swz<D>(8 * nt + (lane & 7), 16 * kk + 8 * ((lane >> 3) & 1));
          unsigned bk[2], bv[2];
          ldmatrix_x2(bk, &kt[off]);
          ldmatrix_x2(bv, &vs[off]);
          mma_bf16(s[nt], qf[kk], bk, s[nt]);
          mma_bf16(dp[nt], df[kk], bv, dp[nt]);
        }
#pragma unroll
      for (int nt = 0; nt < NT; nt++)
        for (int e = 0; e < 4; e++) {
          int h = e >> 1, j = j0 + 8 * nt + 2 * lt + (e & 1);
          bool vis = in[h] && j < hi[h] && L[h] != -INFINITY;
          float p = vis ? expf(__fmul_rn(s[nt][e], scale) - L[h]) : 0.f;
          s[nt][e] = p * (dp[nt][e] - Dsum[h]);  // dS
        }
#pragma unroll
      for (int kk = 0; kk < ATC_BK / 16; kk++) {
        unsigned a[4] = {pack_bf16x2(s[2 * kk][0], s[2 * kk][1]), pack_bf16x2(s[2 * kk][2], s[2 * kk][3]),
                         pack_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                         pack_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
        for (int nd = 0; nd < ND; nd++) {
          unsigned bf[2];
          ldmatrix_x2_trans(bf, &kt[attc_swz<D>(16 * kk + (lane & 15), 8 * nd)]);
          mma_bf16(acc[nd], a, bf, acc[nd]);
        }
      }
      __syncthreads();
    }
  }
#pragma unroll
  for (int h = 0; h < 2; h++) {
    if (qrow[h] < 0) continue;
#pragma unroll
    for (int nd = 0; nd < ND; nd++)
      for (int e = 0; e < 2; e++) dq[qrow[h] * D + 8 * nd + 2 * lt + e] = scale * acc[nd][2 * h + e];
  }
}

#define ATC_KB 64  // keys per attn_tc_bwd_dkdv block (16 per warp)
#define ATC_QB 16  // queries per attn_tc_bwd_dkdv tile

// attc_next_seq: among the queries i of one batch row (kst: the row's
// first keys, or null: all 0) that see a key of the block's [j0, je), finds
// the smallest first key above prev and the last query starting there:
// the block's next pass, over that sequence's queries. It writes them to
// pass[0] and pass[1] (shared; read back after this call, which ends with
// a barrier) and returns false when no pass is left. red: blockDim.x long
// longs of shared memory. Block-uniform.
__device__ __forceinline__ bool attc_next_seq(const int* kst, int Tq, int qpos, int klen, int j0, int je, int prev,
                                              long long* red, int* pass) {
  // (first key, INT_MAX − query) in one key: its minimum is the smallest
  // first key and, among its queries, the last one
  long long best = LLONG_MAX;
  for (int i = max(0, j0 - qpos) + threadIdx.x; i < Tq; i += blockDim.x) {
    int x = kst ? kst[i] : 0, hi = min(klen, qpos + i + 1);
    if (x <= prev || max(x, j0) >= min(hi, je)) continue;  // an earlier pass, or no key of the block
    best = min(best, ((long long)x << 32) | (unsigned)(INT_MAX - i));
  }
  __syncthreads();  // the readers of red and pass from the previous call are done
  red[threadIdx.x] = best;
  __syncthreads();
  if (threadIdx.x == 0) {
#pragma unroll 1
    for (int t = 1; t < blockDim.x; t++) best = min(best, red[t]);
    pass[0] = best == LLONG_MAX ? INT_MAX : (int)(best >> 32);
    pass[1] = INT_MAX - (int)(best & 0xffffffff);
  }
  __syncthreads();
  return pass[0] != INT_MAX;
}

template <int D>
__device__ __forceinline__ void attn_tc_bwd_dkdv_impl(float* dk, float* dv, const bf16_t* q, const bf16_t* k,
                                                      const bf16_t* v, const bf16_t* dout16, const float* lse,
                                                      const float* dsum, const int* meta, const int* kstart, int B,
                                                      int Tq, int Hq, int Hkv, int Tmax, float scale) {
  constexpr int KS = D / 16, ND = D / 8, CH = D / 8;
  __shared__ __align__(16) bf16_t ks[ATC_KB * D], vs[ATC_KB * D], qs[ATC_QB * D], dos[ATC_QB * D];
  __shared__ float lse_s[ATC_QB], dsum_s[ATC_QB];
  __shared__ int lo_s[ATC_QB], hi_s[ATC_QB];
  const int G = Hq / Hkv;
  const int s = blockIdx.z, hk = blockIdx.y, j0 = blockIdx.x * ATC_KB;
  const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5, lg = lane >> 2, lt = lane & 3;

  for (int e = tid; e < ATC_KB * CH; e += ATC_THREADS) {
    int jj = e / CH, c = e % CH, j = j0 + jj;
    bool ok = j < Tmax;
    long long off = ok ? (((long long)s * Tmax + j) * Hkv + hk) * D + 8 * c : 0;
    cp_async16(&ks[attc_swz<D>(jj, 8 * c)], k + off, ok);
    cp_async16(&vs[attc_swz<D>(jj, 8 * c)], v + off, ok);
  }
  cp_async_commit();
  float dka[ND][4], dva[ND][4];
#pragma unroll
  for (int nd = 0; nd < ND; nd++)
    for (int e = 0; e < 4; e++) dka[nd][e] = dva[nd][e] = 0.f;

  // One pass per sequence among the batch rows reading this slot (the
  // queries sharing a first key kf; without kstart, all of a row's): its
  // 16-query tiles sit at positions counted from the sequence's first query
  // (kf − qpos), as they are when the sequence is trained alone, so each
  // key's sums are cut into the same k-tiles; the pass covers only the
  // tiles from the first query that sees a key of the block to the
  // sequence's last, so the query tiles of other sequences are skipped,
  // and rows of other sequences inside an edge tile get p = 0.
  __shared__ long long red[ATC_THREADS];
  __shared__ int pass[2];  // the pass's first key and last query (kept in shared memory: registers are full)
  const volatile int* vpass = pass;
  const int je = j0 + ATC_KB;
  for (int b = 0; b < B; b++) {
    const int qpos = meta[B + b], klen = meta[2 * B + b];
    if (meta[b] != s || j0 >= klen) continue;  // block-uniform
    for (int prev = -1; attc_next_seq(kstart ? kstart + (long long)b * Tq : nullptr, Tq, qpos, klen, j0, min(je, klen),
                                      prev, red, pass);
         prev = vpass[0]) {
      const int a = vpass[0] - qpos, ifirst = max(0, max(j0, vpass[0]) - qpos);  // ifirst ≥ a
      const int ib0 = a + (ifirst - a) / ATC_QB * ATC_QB;
      for (int g = 0; g < G; g++) {
        const int h = hk * G + g;
        for (int ib = ib0; ib <= vpass[1]; ib += ATC_QB) {
          __syncthreads();  // the previous tile is consumed
          for (int e = tid; e < ATC_QB * CH; e += ATC_THREADS) {
            int r = e / CH, c = e % CH, i = ib + r;
            bool ok = i >= 0 && i < Tq;
            long long off = ok ? (((long long)b * Tq + i) * Hq + h) * D + 8 * c : 0;
            cp_async16(&qs[attc_swz<D>(r, 8 * c)], q + off, ok);
            cp_async16(&dos[attc_swz<D>(r, 8 * c)], dout16 + off, ok);
          }
          cp_async_commit();
          for (int r = tid; r < ATC_QB; r += ATC_THREADS) {
            int i = ib + r;
            bool ok = i >= 0 && i < Tq;
            long long row = ((long long)b * Tq + i) * Hq + h;
            lse_s[r] = ok ? lse[row] : -INFINITY;
            dsum_s[r] = ok ? dsum[row] : 0.f;
            int lo = ok ? (kstart ? kstart[(long long)b * Tq + i] : 0) : -1;
            lo_s[r] = lo == vpass[0] ? lo : INT_MAX;  // only this pass's rows see keys
            hi_s[r] = ok ? min(klen, qpos + i + 1) : 0;
          }
          cp_async_wait<0>();
          __syncthreads();
          float st[2][4], dpt[2][4];
#pragma unroll
          for (int nt = 0; nt < 2; nt++)
            for (int e = 0; e < 4; e++) st[nt][e] = dpt[nt][e] = 0.f;
#pragma unroll
          for (int kk = 0; kk < KS; kk++) {
            unsigned ka[4], va[4];
            int aoff = attc_swz<D>(16 * w + (lane & 15), 16 * kk + 8 * (lane >> 4));
            ldmatrix_x4(ka, &ks[aoff]);
            ldmatrix_x4(va, &vs[aoff]);
#pragma unroll
            for (int nt = 0; nt < 2; nt++) {
              int boff = attc_swz<D>(8 * nt + (lane & 7), 16 * kk + 8 * ((lane >> 3) & 1));
              unsigned bq_[2], bo[2];
              ldmatrix_x2(bq_, &qs[boff]);
              ldmatrix_x2(bo, &dos[boff]);
              mma_bf16(st[nt], ka, bq_, st[nt]);
              mma_bf16(dpt[nt], va, bo, dpt[nt]);
            }
          }
          // element (nt, e): key j0+16w+lg+8(e>>1), query ib+8nt+2lt+(e&1)
#pragma unroll
          for (int nt = 0; nt < 2; nt++)
            for (int e = 0; e < 4; e++) {
              int j = j0 + 16 * w + lg + 8 * (e >> 1), r = 8 * nt + 2 * lt + (e & 1);
              bool vis = j >= lo_s[r] && j < hi_s[r] && lse_s[r] != -INFINITY;
              float p = vis ? expf(__fmul_rn(st[nt][e], scale) - lse_s[r]) : 0.f;
              st[nt][e] = p;
              dpt[nt][e] = p * (dpt[nt][e] - dsum_s[r]);  // dSᵀ
            }
          unsigned pa[4] = {pack_bf16x2(st[0][0], st[0][1]), pack_bf16x2(st[0][2], st[0][3]),
                            pack_bf16x2(st[1][0], st[1][1]), pack_bf16x2(st[1][2], st[1][3])};
          unsigned sa[4] = {pack_bf16x2(dpt[0][0], dpt[0][1]), pack_bf16x2(dpt[0][2], dpt[0][3]),
                            pack_bf16x2(dpt[1][0], dpt[1][1]), pack_bf16x2(dpt[1][2], dpt[1][3])};
#pragma unroll
          for (int nd = 0; nd < ND; nd++) {
            int off = attc_swz<D>(lane & 15, 8 * nd);
            unsigned bo[2], bq_[2];
            ldmatrix_x2_trans(bo, &dos[off]);
            ldmatrix_x2_trans(bq_, &qs[off]);
            mma_bf16(dva[nd], pa, bo, dva[nd]);
            mma_bf16(dka[nd], sa, bq_, dka[nd]);
          }
        }
      }
    }
  }
  cp_async_wait<0>();  // no query tile: the K/V copies still land before exit
#pragma unroll
  for (int hh = 0; hh < 2; hh++) {
    int j = j0 + 16 * w + lg + 8 * hh;
    if (j >= Tmax) continue;
    long long o = (((long long)s * Tmax + j) * Hkv + hk) * D;
#pragma unroll
    for (int nd = 0; nd < ND; nd++)
      for (int e = 0; e < 2; e++) {
        dk[o + 8 * nd + 2 * lt + e] = scale * dka[nd][2 * hh + e];
        dv[o + 8 * nd + 2 * lt + e] = dva[nd][2 * hh + e];
      }
  }
}

// one kernel per head dim (extern "C" names for the driver and the emulator)
extern "C" __global__ void __launch_bounds__(128) attn_tc_bwd_dq16(
    float* dq, float* dsum, const bf16_t* q, const bf16_t* k, const bf16_t* v, const bf16_t* dout16, const float* dout,
    const float* out, const float* lse, const int* meta, const int* kstart, int B, int Tq, int Hq, int Hkv, int Tmax,
    float scale, int gb, int bq) {
  attn_tc_bwd_dq_impl<16>(dq, dsum, q, k, v, dout16, dout, out, lse, meta, kstart, B, Tq, Hq, Hkv, Tmax, scale, gb, bq);
}
extern "C" __global__ void __launch_bounds__(128) attn_tc_bwd_dq32(
    float* dq, float* dsum, const bf16_t* q, const bf16_t* k, const bf16_t* v, const bf16_t* dout16, const float* dout,
    const float* out, const float* lse, const int* meta, const int* kstart, int B, int Tq, int Hq, int Hkv, int Tmax,
    float scale, int gb, int bq) {
  attn_tc_bwd_dq_impl<32>(dq, dsum, q, k, v, dout16, dout, out, lse, meta, kstart, B, Tq, Hq, Hkv, Tmax, scale, gb, bq);
}
extern "C" __global__ void __launch_bounds__(128) attn_tc_bwd_dq64(
    float* dq, float* dsum, const bf16_t* q, const bf16_t* k, const bf16_t* v, const bf16_t* dout16, const float* dout,
    const float* out, const float* lse, const int* meta, const int* kstart, int B, int Tq, int Hq, int Hkv, int Tmax,
    float scale, int gb, int bq) {
  attn_tc_bwd_dq_impl<64>(dq, dsum, q, k, v, dout16, dout, out, lse, meta, kstart, B, Tq, Hq, Hkv, Tmax, scale, gb, bq);
}
extern "C" __global__ void __launch_bounds__(128) attn_tc_bwd_dq128(
    float* dq, float* dsum, const bf16_t* q, const bf16_t* k, const bf16_t* v, const bf16_t* dout16, const float* dout,
    const float* out, const float* lse, const int* meta, const int* kstart, int B, int Tq, int Hq, int Hkv, int Tmax,
    float scale, int gb, int bq) {
  attn_tc_bwd_dq_impl<128>(dq, dsum, q, k, v, dout16, dout, out, lse, meta, kstart, B, Tq, Hq, Hkv, Tmax, scale, gb, bq);
}
extern "C" __global__ void __launch_bounds__(128) attn_tc_bwd_dkdv16(
    float* dk, float* dv, const bf16_t* q, const bf16_t* k, const bf16_t* v, const bf16_t* dout16, const float* lse,
    const float* dsum, const int* meta, const int* kstart, int B, int Tq, int Hq, int Hkv, int Tmax, float scale) {
  attn_tc_bwd_dkdv_impl<16>(dk, dv, q, k, v, dout16, lse, dsum, meta, kstart, B, Tq, Hq, Hkv, Tmax, scale);
}
extern "C" __global__ void __launch_bounds__(128) attn_tc_bwd_dkdv32(
    float* dk, float* dv, const bf16_t* q, const bf16_t* k, const bf16_t* v, const bf16_t* dout16, const float* lse,
    const float* dsum, const int* meta, const int* kstart, int B, int Tq, int Hq, int Hkv, int Tmax, float scale) {
  attn_tc_bwd_dkdv_impl<32>(dk, dv, q, k, v, dout16, lse, dsum, meta, kstart, B, Tq, Hq, Hkv, Tmax, scale);
}
extern "C" __global__ void __launch_bounds__(128) attn_tc_bwd_dkdv64(
    float* dk, float* dv, const bf16_t* q, const bf16_t* k, const bf16_t* v, const bf16_t* dout16, const float* lse,
    const float* dsum, const int* meta, const int* kstart, int B, int Tq, int Hq, int Hkv, int Tmax, float scale) {
  attn_tc_bwd_dkdv_impl<64>(dk, dv, q, k, v, dout16, lse, dsum, meta, kstart, B, Tq, Hq, Hkv, Tmax, scale);
}
extern "C" __global__ void __launch_bounds__(128) attn_tc_bwd_dkdv128(
    float* dk, float* dv, const bf16_t* q, const bf16_t* k, const bf16_t* v, const bf16_t* dout16, const float* lse,
    const float* dsum, const int* meta, const int* kstart, int B, int Tq, int Hq, int Hkv, int Tmax, float scale) {
  attn_tc_bwd_dkdv_impl<128>(dk, dv, q, k, v, dout16, lse, dsum, meta, kstart, B, Tq, Hq, Hkv, Tmax, scale);
}
