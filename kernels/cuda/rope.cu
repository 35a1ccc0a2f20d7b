// rope.cu: rotary embeddings in the rotate-half layout (kernels.RefRoPE).
// x, out [N,H,D]; cos, sin [P, D/2]; pos [N] (validated < P by the host).
#include "common.cuh"

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
    float x0 = x[nh * D + i], x1 = x[nh * D + i + half];
    out[nh * D + i] = x0 * c - x1 * s;
    out[nh * D + i + half] = x1 * c + x0 * s;
  }
}
