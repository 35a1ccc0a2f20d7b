// attn_tc.cu: causal grouped-query attention forward on tensor cores
// (kernels.RefAttention on bf16 q, k, v), FlashAttention-2 style, for the
// bf16 backends (cuda-bf16tc, cuda-bf16, cuda-emu-bf16). The shapes and
// masking are attention.cu's:
//
//	q [B,Tq,Hq,D] bf16   k, v [S,Tmax,Hkv,D] bf16   meta [3B] = slot, qpos, klen
//	out [B,Tq,Hq,D] f32  lse [B,Tq,Hq] f32
//	kstart [B*Tq] or null: row (b,i) also needs key j >= kstart[b*Tq+i]
//	pages [B*max_pages] or null: a paged cache, k, v [pages, Tmax, Hkv, D];
//	  key j of row b is row j%Tmax of page pages[b*max_pages + j/Tmax]
//
// A block is 4 warps; warp w owns rows 16w..16w+15 of the block's 64 rows
// (query position i, head g of one KV group, packed as attention.cu does,
// so decoding shares each K/V tile among the G heads). Per 32-key tile:
// S = Q·Kᵀ on mma.sync (Q fragments held in registers, K through
// ldmatrix), online softmax in f32 on the accumulators, P rounded to bf16
// and O += P·V on mma.sync (V through ldmatrix .trans). K/V tiles are
// double-buffered in shared memory with cp.async (the next tile is in
// flight while this one is used); 16-byte chunks are XOR-swizzled per row
// so that ldmatrix's 8 rows hit 8 different bank groups.
//
// Summation order, so that decoding and training agree bit for bit (ρ − 1
// = 0 on the first mini-batch, docs/design.md): a row's keys are cut into
// chunks of ATC_KC = 256 and each chunk into tiles of 32, at positions
// counted from the row's first key ((j − kstart) / 256; kstart = 0
// without packing), so a packed sequence is cut where it would be alone
// or decoded. A block whose rows start at different keys (a sequence
// boundary) runs one pass per distinct kstart (attc_next_pass). A chunk's
// partial (m, l, o) of one row depends only on that row, the chunk's keys
// and the tile order; chunks are merged c = 0, 1, ... by attc_merge.
// Training (split = 0) merges in registers; decoding (split = 1,
// flash-decoding: one block per chunk, so one long context fills the GPU)
// writes partials and attn_tc_combine merges them with the same function.
// Rows of a block, passes and tiles a row does not see and chunks past a
// row's keys change nothing (exact identities: x·1, x + 0), so neither
// the batch, the packing, the paging nor the split enters a row's sums.
//
// Bytes and FLOPs per (row, visible key): 4·D FLOPs on tensor cores (Q·Kᵀ
// and P·V); K/V read once per block of 64 rows: 4·D bytes per key.
#include "attn_tc.cuh"

// attn_tc_fwd_impl: grid (ceil(Tq/bq)·nsplit, Hkv·ceil(G/gb), B), 128
// threads, bq·gb ≤ 64. split = 0: the block does every chunk and writes
// out and lse. split = 1: blockIdx.x = tile·nc + chunk; the block does one
// chunk and writes the partials pm, pl [rows·nc], po [rows·nc·D] (rows in
// q order) for attn_tc_combine.
template <int D>
__device__ __forceinline__ void attn_tc_fwd_impl(float* out, float* lse, float* pm, float* pl, float* po,
                                                 const bf16_t* q, const bf16_t* k, const bf16_t* v, const int* meta,
                                                 const int* kstart, const int* pages, int max_pages, int B, int Tq,
                                                 int Hq, int Hkv, int Tmax, float scale, int gb, int bq, int split,
                                                 int nc) {
  constexpr int KS = D / 16, NT = ATC_BK / 8, ND = D / 8, CH = D / 8;
  // two stages of K and V tiles; Q is staged through stage 0 first
  __shared__ __align__(16) bf16_t sm[2][2][ATC_BK * D];
  static_assert(ATC_BM * D <= 2 * ATC_BK * D, "Q staging must fit in one stage");
  const int G = Hq / Hkv, ngb = (G + gb - 1) / gb;
  const int tile = split ? blockIdx.x / nc : blockIdx.x, chunk = split ? blockIdx.x % nc : 0;
  const int b = blockIdx.z, hk = blockIdx.y / ngb, g0 = (blockIdx.y % ngb) * gb, i0 = tile * bq;
  const int slot = meta[b], qpos = meta[B + b], klen = meta[2 * B + b];
  const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5, lg = lane >> 2, lt = lane & 3;

  // the first key and the end of the keys of the block's positions (passes)
  __shared__ int ks_s[ATC_BM], hi_s[ATC_BM];
  attc_fill_passes(ks_s, hi_s, b, i0, bq, Tq, qpos, klen, kstart);

  // Q → shared (64 rows × D; rows outside the problem zero-filled) → registers
  bf16_t* qs = &sm[0][0][0];
  for (int e = tid; e < ATC_BM * CH; e += ATC_THREADS) {
    int r = e / CH, c = e % CH, lo, hi;
    long long row = attc_row(r, b, i0, g0, hk, gb, bq, Tq, Hq, G, qpos, klen, nullptr, &lo, &hi);
    cp_async16(&qs[attc_swz<D>(r, 8 * c)], row < 0 ? q : q + row * D + 8 * c, row >= 0);
  }
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  unsigned qf[KS][4];
#pragma unroll
  for (int kk = 0; kk < KS; kk++) ldmatrix_x4(qf[kk], &qs[attc_swz<D>(16 * w + (lane & 15), 16 * kk + 8 * (lane >> 4))]);
  __syncthreads();  // qs is overwritten by the first K tile

  // this lane's two rows: 16w+lg and 16w+lg+8
  int lo[2], hi[2];
  long long qrow[2];
  for (int h = 0; h < 2; h++)
    qrow[h] = attc_row(16 * w + lg + 8 * h, b, i0, g0, hk, gb, bq, Tq, Hq, G, qpos, klen, kstart, &lo[h], &hi[h]);

  // Chunks and tiles sit at fixed positions relative to the row's first
  // key, kstart (0 without packing), so that a packed sequence sums as it
  // would alone. The block runs one pass per distinct kstart of its rows
  // (a block holds rows of two sequences at a boundary; of more when they
  // are shorter than bq); a pass's tiles start at its kstart, and the
  // other rows see none of its keys: their state is unchanged (max with
  // −∞, α = 1, p = 0: exact identities).
  float M[2] = {-INFINITY, -INFINITY}, L[2] = {0.f, 0.f}, O[ND][4];
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, o[ND][4];
#pragma unroll
  for (int nd = 0; nd < ND; nd++)
    for (int e = 0; e < 4; e++) O[nd][e] = o[nd][e] = 0.f;

  const long long kvrow = (long long)slot * Tmax;
  for (int ks = -1;;) {
    int kend;
    ks = attc_next_pass(ks_s, hi_s, bq, ks, &kend);  // block-uniform
    if (ks == INT_MAX) break;
    bool in[2] = {qrow[0] >= 0 && lo[0] == ks, qrow[1] >= 0 && lo[1] == ks};
    const int cbeg = split ? chunk : 0, cend = split ? chunk + 1 : (kend - ks + ATC_KC - 1) / ATC_KC;
    const int jbeg = ks + cbeg * ATC_KC, jend = min(kend, ks + cend * ATC_KC);
    // load_tile: K and V rows [j0, j0+32) into stage st (zero past kend)
    auto load_tile = [&](int st, int j0) {
      for (int e = tid; e < ATC_BK * CH; e += ATC_THREADS) {
        int jj = e / CH, c = e % CH, j = j0 + jj;
        bool ok = j < kend;
        long long off = 0;
        if (ok) {  // paged cache: key j is row j%Tmax of page pages[b·max_pages + j/Tmax]
          long long krow = pages ? (long long)pages[b * max_pages + j / Tmax] * Tmax + j % Tmax : kvrow + j;
          off = (krow * Hkv + hk) * D + 8 * c;
        }
        cp_async16(&sm[st][0][attc_swz<D>(jj, 8 * c)], k + off, ok);
        cp_async16(&sm[st][1][attc_swz<D>(jj, 8 * c)], v + off, ok);
      }
      cp_async_commit();
    };
    if (jbeg < jend) load_tile(0, jbeg);
    int st = 0;
    for (int j0 = jbeg; j0 < jend; j0 += ATC_BK, st ^= 1) {
      if ((j0 - ks) % ATC_KC == 0) {  // a chunk starts: fresh partials for the pass's rows
#pragma unroll
        for (int h = 0; h < 2; h++) {
          if (!in[h]) continue;
          m[h] = -INFINITY, l[h] = 0.f;
#pragma unroll
          for (int nd = 0; nd < ND; nd++)
            for (int e = 0; e < 2; e++) o[nd][2 * h + e] = 0.f;
        }
      }
      if (j0 + ATC_BK < jend) {
        load_tile(st ^ 1, j0 + ATC_BK);
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();
      const bf16_t* ks_ = &sm[st][0][0];
      const bf16_t* vs = &sm[st][1][0];

      float s[NT][4];
#pragma unroll
      for (int nt = 0; nt < NT; nt++)
        for (int e = 0; e < 4; e++) s[nt][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < KS; kk++)
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
          unsigned bf[2];
          ldmatrix_x2(bf, &ks_[attc_swz<D>(8 * nt + (lane & 7), 16 * kk + 8 * ((lane >> 3) & 1))]);
          mma_bf16(s[nt], qf[kk], bf, s[nt]);
        }

      // online softmax per row (h = 0: elements 0,1; h = 1: elements 2,3)
      float alpha[2];
#pragma unroll
      for (int h = 0; h < 2; h++) {
        float mx = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
          for (int e = 0; e < 2; e++) {
            int j = j0 + 8 * nt + 2 * lt + e;
            float x = (in[h] && j < hi[h]) ? __fmul_rn(s[nt][2 * h + e], scale) : -INFINITY;
            s[nt][2 * h + e] = x;
            mx = fmaxf(mx, x);
          }
        mx = fmaxf(mx, __shfl_xor_sync(FULL_MASK, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(FULL_MASK, mx, 2));
        float mn = fmaxf(m[h], mx);
        alpha[h] = (mn == -INFINITY) ? 1.f : expf(m[h] - mn);
        float sum = 0.f;
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
          for (int e = 0; e < 2; e++) {
            float x = s[nt][2 * h + e];
            float p = (x == -INFINITY) ? 0.f : expf(x - mn);
            s[nt][2 * h + e] = p;
            sum = __fadd_rn(sum, p);
          }
        sum = __fadd_rn(sum, __shfl_xor_sync(FULL_MASK, sum, 1));
        sum = __fadd_rn(sum, __shfl_xor_sync(FULL_MASK, sum, 2));
        l[h] = __fadd_rn(__fmul_rn(l[h], alpha[h]), sum);
        m[h] = mn;
      }
#pragma unroll
      for (int nd = 0; nd < ND; nd++)
        for (int e = 0; e < 4; e++) o[nd][e] = __fmul_rn(o[nd][e], alpha[e >> 1]);
#pragma unroll
      for (int kk = 0; kk < ATC_BK / 16; kk++) {
        unsigned pa[4] = {pack_bf16x2(s[2 * kk][0], s[2 * kk][1]), pack_bf16x2(s[2 * kk][2], s[2 * kk][3]),
                          pack_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                          pack_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
        for (int nd = 0; nd < ND; nd++) {
          unsigned bf[2];
          ldmatrix_x2_trans(bf, &vs[attc_swz<D>(16 * kk + (lane & 15), 8 * nd)]);
          mma_bf16(o[nd], pa, bf, o[nd]);
        }
      }
      __syncthreads();  // stage st is refilled by the next iteration's prefetch

      // the chunk ends: merge the pass's rows (split: the partial is written below)
      if (!split && ((j0 + ATC_BK - ks) % ATC_KC == 0 || j0 + ATC_BK >= jend)) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
          if (!in[h]) continue;
          float a, bb, Mn;
          attc_factors(M[h], m[h], &a, &bb, &Mn);
          L[h] = attc_mix(L[h], a, l[h], bb);
          M[h] = Mn;
#pragma unroll
          for (int nd = 0; nd < ND; nd++)
            for (int e = 0; e < 2; e++) O[nd][2 * h + e] = attc_mix(O[nd][2 * h + e], a, o[nd][2 * h + e], bb);
        }
      }
    }
  }

  if (split) {  // this chunk's partials (-inf, 0, 0 where the row has no key in it)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      if (qrow[h] < 0) continue;
      long long pr = qrow[h] * nc + chunk;
      if (lt == 0) pm[pr] = m[h], pl[pr] = l[h];
#pragma unroll
      for (int nd = 0; nd < ND; nd++)
        for (int e = 0; e < 2; e++) po[pr * D + 8 * nd + 2 * lt + e] = o[nd][2 * h + e];
    }
    return;
  }
#pragma unroll
  for (int h = 0; h < 2; h++) {
    if (qrow[h] < 0) continue;
    bool none = M[h] == -INFINITY;
    if (lt == 0) lse[qrow[h]] = none ? -INFINITY : M[h] + logf(L[h]);
#pragma unroll
    for (int nd = 0; nd < ND; nd++)
      for (int e = 0; e < 2; e++) out[qrow[h] * D + 8 * nd + 2 * lt + e] = none ? 0.f : O[nd][2 * h + e] / L[h];
  }
}

// one kernel per head dim (extern "C" names for the driver and the emulator)
extern "C" __global__ void __launch_bounds__(128) attn_tc_fwd16(
    float* out, float* lse, float* pm, float* pl, float* po, const bf16_t* q, const bf16_t* k, const bf16_t* v,
    const int* meta, const int* kstart, const int* pages, int max_pages, int B, int Tq, int Hq, int Hkv, int Tmax,
    float scale, int gb, int bq, int split, int nc) {
  attn_tc_fwd_impl<16>(out, lse, pm, pl, po, q, k, v, meta, kstart, pages, max_pages, B, Tq, Hq, Hkv, Tmax, scale, gb, bq, split, nc);
}
extern "C" __global__ void __launch_bounds__(128) attn_tc_fwd32(
    float* out, float* lse, float* pm, float* pl, float* po, const bf16_t* q, const bf16_t* k, const bf16_t* v,
    const int* meta, const int* kstart, const int* pages, int max_pages, int B, int Tq, int Hq, int Hkv, int Tmax,
    float scale, int gb, int bq, int split, int nc) {
  attn_tc_fwd_impl<32>(out, lse, pm, pl, po, q, k, v, meta, kstart, pages, max_pages, B, Tq, Hq, Hkv, Tmax, scale, gb, bq, split, nc);
}
extern "C" __global__ void __launch_bounds__(128) attn_tc_fwd64(
    float* out, float* lse, float* pm, float* pl, float* po, const bf16_t* q, const bf16_t* k, const bf16_t* v,
    const int* meta, const int* kstart, const int* pages, int max_pages, int B, int Tq, int Hq, int Hkv, int Tmax,
    float scale, int gb, int bq, int split, int nc) {
  attn_tc_fwd_impl<64>(out, lse, pm, pl, po, q, k, v, meta, kstart, pages, max_pages, B, Tq, Hq, Hkv, Tmax, scale, gb, bq, split, nc);
}
extern "C" __global__ void __launch_bounds__(128) attn_tc_fwd128(
    float* out, float* lse, float* pm, float* pl, float* po, const bf16_t* q, const bf16_t* k, const bf16_t* v,
    const int* meta, const int* kstart, const int* pages, int max_pages, int B, int Tq, int Hq, int Hkv, int Tmax,
    float scale, int gb, int bq, int split, int nc) {
  attn_tc_fwd_impl<128>(out, lse, pm, pl, po, q, k, v, meta, kstart, pages, max_pages, B, Tq, Hq, Hkv, Tmax, scale, gb, bq, split, nc);
}

// attn_tc_combine: one thread per (row, d) of rows [n]: merges the nc
// chunk partials in chunk order with attc_merge's arithmetic (as the
// training kernel does in registers) and writes out and lse.
extern "C" __global__ void __launch_bounds__(128) attn_tc_combine(float* out, float* lse, const float* pm,
                                                                  const float* pl, const float* po, long long n,
                                                                  int D, int nc) {
  GRID_STRIDE(e, n * D) {
    long long row = e / D;
    int d = (int)(e % D);
    float M = -INFINITY, L = 0.f, O = 0.f;
    for (int c = 0; c < nc; c++) {
      long long pr = row * nc + c;
      float a, bb, Mn;
      attc_factors(M, pm[pr], &a, &bb, &Mn);
      L = attc_mix(L, a, pl[pr], bb);
      O = attc_mix(O, a, po[pr * D + d], bb);
      M = Mn;
    }
    bool none = M == -INFINITY;
    out[e] = none ? 0.f : O / L;
    if (d == 0) lse[row] = none ? -INFINITY : M + logf(L);
  }
}

// kv_write_bf16: kv_write into a bf16 cache (each element rounded to
// nearest even, as the training path's f32 → bf16 conversion of k and v).
extern "C" __global__ void __launch_bounds__(256) kv_write_bf16(bf16_t* cache, const float* x, const int* meta,
                                                                int B, int T, int Hkv, int D, int Tmax) {
  const long long HD = (long long)Hkv * D;
  GRID_STRIDE(e, (long long)B * T * HD) {
    long long hd = e % HD, bt = e / HD;
    int t = (int)(bt % T), b = (int)(bt / T);
    cache[((long long)meta[b] * Tmax + meta[B + b] + t) * HD + hd] = f32_to_bf16(x[e]);
  }
}
