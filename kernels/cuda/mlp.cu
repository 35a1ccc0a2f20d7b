// mlp.cu: the SiLU-gated MLP nonlinearity (kernels.RefSwiGLU,
// kernels.RefSwiGLUBackward). out, dout [N,F] dense; gate, up, dgate, dup
// read/written at row stride ld >= F: ld = F for separate [N,F] buffers,
// ld = 2F (up = gate + F) for the fused gate/up GEMM's [N,2F] output, so no
// split copy is ever made.
//
// Per element: forward reads 2 and writes 1 f32 (12 bytes), about 4 FLOPs
// and one expf; backward reads 3 and writes 2 (20 bytes), about 10 FLOPs and
// one expf. Memory-bound: N·F·12 (forward) and N·F·20 (backward) bytes.
#include "common.cuh"

// Launch: grid (x, y) = (min(ceil(F/256), 8192), min(N, 65535)), block 256;
// block row y takes rows y, y + gridDim.y, ...; its threads stride over the
// columns: no 64-bit division per element (a 64-bit index divided by F made
// ptxas spill at sm_90).

// swiglu_fwd: out may alias gate or up when ld == F (each thread reads its
// inputs before writing).
//
//	out[r*F+f] = silu(g)*u, g = gate[r*ld+f], u = up[r*ld+f], silu(g) = g/(1+e^-g)
extern "C" __global__ void __launch_bounds__(256) swiglu_fwd(float* out, const float* gate, const float* up, int N, int F,
                                                             long long ld) {
  for (int r = blockIdx.y; r < N; r += gridDim.y) {
    const float *g = gate + r * ld, *u = up + r * ld;
    float* o = out + (long long)r * F;
    for (int f = blockIdx.x * blockDim.x + threadIdx.x; f < F; f += gridDim.x * blockDim.x) {
      float x = g[f];
      o[f] = x / (1.f + expf(-x)) * u[f];
    }
  }
}

// swiglu_bwd: s = sigmoid(g); dgate = dout*up*s*(1+g*(1-s)); dup = dout*g*s,
// dgate and dup at the stride of gate and up.
extern "C" __global__ void __launch_bounds__(256) swiglu_bwd(float* dgate, float* dup, const float* dout, const float* gate,
                                                             const float* up, int N, int F, long long ld) {
  for (int r = blockIdx.y; r < N; r += gridDim.y) {
    const float *g = gate + r * ld, *u = up + r * ld, *d = dout + (long long)r * F;
    float *dg = dgate + r * ld, *du = dup + r * ld;
    for (int f = blockIdx.x * blockDim.x + threadIdx.x; f < F; f += gridDim.x * blockDim.x) {
      float x = g[f], y = u[f], z = d[f];
      float sg = 1.f / (1.f + expf(-x));
      dg[f] = z * y * sg * (1.f + x * (1.f - sg));
      du[f] = z * x * sg;
    }
  }
}
