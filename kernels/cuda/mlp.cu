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

// swiglu_fwd: one thread per output element (r, f); out may alias gate or
// up when ld == F (each thread reads its inputs before writing).
//
//	out[r*F+f] = silu(g)*u, g = gate[r*ld+f], u = up[r*ld+f], silu(g) = g/(1+e^-g)
extern "C" __global__ void __launch_bounds__(256) swiglu_fwd(float* out, const float* gate, const float* up, long long N,
                                                             int F, int ld) {
  GRID_STRIDE(i, N * F) {
    long long r = i / F, s = r * ld + (i - r * F);
    float g = gate[s];
    out[i] = g / (1.f + expf(-g)) * up[s];
  }
}

// swiglu_bwd: s = sigmoid(g); dgate = dout*up*s*(1+g*(1-s)); dup = dout*g*s,
// dgate and dup at the stride of gate and up.
extern "C" __global__ void __launch_bounds__(256) swiglu_bwd(float* dgate, float* dup, const float* dout, const float* gate,
                                                             const float* up, long long N, int F, int ld) {
  GRID_STRIDE(i, N * F) {
    long long r = i / F, e = r * ld + (i - r * F);
    float g = gate[e], u = up[e], d = dout[i];
    float s = 1.f / (1.f + expf(-g));
    dgate[e] = d * u * s * (1.f + g * (1.f - s));
    dup[e] = d * g * s;
  }
}
