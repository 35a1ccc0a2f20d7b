// embedding.cu: token embedding gather and its scatter-add gradient
// (kernels.RefEmbedding, kernels.RefEmbeddingBackward). table, dtable [V,C];
// out, dout [N,C]; ids [N] (validated 0 <= id < V by the host).
#include "common.cuh"

// embedding_fwd: out[n,c] = table[ids[n],c] (F32 table).
extern "C" __global__ void __launch_bounds__(256) embedding_fwd(float* out, const float* table, const int* ids, int N, int C) {
  GRID_STRIDE(i, (long long)N * C) {
    long long n = i / C, c = i % C;
    out[i] = table[(long long)ids[n] * C + c];
  }
}

// embedding_fwd_bf16: the same with a BF16 table, widened exactly.
extern "C" __global__ void __launch_bounds__(256) embedding_fwd_bf16(float* out, const bf16_t* table, const int* ids, int N, int C) {
  GRID_STRIDE(i, (long long)N * C) {
    long long n = i / C, c = i % C;
    out[i] = bf16_to_f32(table[(long long)ids[n] * C + c]);
  }
}

// embedding_bwd: dtable[ids[n],c] += dout[n,c]; dtable is zeroed by the host
// first. Repeated ids meet in atomicAdd (summation order is not fixed).
extern "C" __global__ void __launch_bounds__(256) embedding_bwd(float* dtable, const float* dout, const int* ids, int N, int C) {
  GRID_STRIDE(i, (long long)N * C) {
    long long n = i / C, c = i % C;
    atomicAdd(&dtable[(long long)ids[n] * C + c], dout[i]);
  }
}
