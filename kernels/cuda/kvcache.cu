// kvcache.cu: the paged KV cache (kernels.AttnParams.Pages): the write of
// a decode step (kernels.RefKVScatter) and the gather that lets today's
// attn_fwd read a paged cache.
//
//	cache       [S, Tmax, Hkv, D]   S pages of Tmax tokens, f32 or bf16
//	x           [N, Hkv, D]         one new token per row
//	dst         [B, L, Hkv, D]      the gathered keys (or values) of each row
//	meta        kv_scatter: [2N] = page[N], off[N]
//	            kv_gather:  [B*MaxPages] pages, then [B] keys to copy
//
// Bytes moved: kv_scatter reads and writes N·Hkv·D elements; kv_gather
// reads and writes Σ_b keys[b]·Hkv·D. No arithmetic. The host validates
// every page and offset (kernels.ArgCheck) before a launch.
#include "common.cuh"

// kv_scatter: one thread per element of x; row n goes to (page[n], off[n]).
//
//	cache[((page[n]*Tmax+off[n])*Hkv+h)*D+d] = x[(n*Hkv+h)*D+d]
extern "C" __global__ void __launch_bounds__(256) kv_scatter(float* cache, const float* x, const int* meta, int N, int HD, int Tmax) {
  GRID_STRIDE(e, (long long)N * HD) {
    long long hd = e % HD;
    int n = (int)(e / HD);
    cache[((long long)meta[n] * Tmax + meta[N + n]) * HD + hd] = x[e];
  }
}

// kv_scatter_bf16: kv_scatter into a bf16 cache (round to nearest even).
extern "C" __global__ void __launch_bounds__(256) kv_scatter_bf16(bf16_t* cache, const float* x, const int* meta, int N, int HD, int Tmax) {
  GRID_STRIDE(e, (long long)N * HD) {
    long long hd = e % HD;
    int n = (int)(e / HD);
    cache[((long long)meta[n] * Tmax + meta[N + n]) * HD + hd] = f32_to_bf16(x[e]);
  }
}

// kv_gather: one thread per element of dst [B, L, HD]; key j < keys[b] of
// row b comes from row j%Tmax of page pages[b*maxPages+j/Tmax]; the rest of
// the row (keys no query sees) is left as it is.
extern "C" __global__ void __launch_bounds__(256) kv_gather(float* dst, const float* cache, const int* meta, int B, int L, int HD,
                                     int Tmax, int maxPages) {
  GRID_STRIDE(e, (long long)B * L * HD) {
    long long hd = e % HD, bj = e / HD;
    int j = (int)(bj % L), b = (int)(bj / L);
    if (j >= meta[B * maxPages + b]) continue;
    int page = meta[b * maxPages + j / Tmax];
    dst[e] = cache[((long long)page * Tmax + j % Tmax) * HD + hd];
  }
}

// kv_gather_bf16: kv_gather from a bf16 cache (widened exactly).
extern "C" __global__ void __launch_bounds__(256) kv_gather_bf16(float* dst, const bf16_t* cache, const int* meta, int B, int L, int HD,
                                          int Tmax, int maxPages) {
  GRID_STRIDE(e, (long long)B * L * HD) {
    long long hd = e % HD, bj = e / HD;
    int j = (int)(bj % L), b = (int)(bj / L);
    if (j >= meta[B * maxPages + b]) continue;
    int page = meta[b * maxPages + j / Tmax];
    dst[e] = bf16_to_f32(cache[((long long)page * Tmax + j % Tmax) * HD + hd]);
  }
}
