// mlp.cu: the SiLU-gated MLP nonlinearity (kernels.RefSwiGLU,
// kernels.RefSwiGLUBackward); all tensors [n], elementwise.
#include "common.cuh"

// swiglu_fwd: out = silu(gate)*up, silu(g) = g/(1+e^-g). out may alias.
extern "C" __global__ void __launch_bounds__(256) swiglu_fwd(float* out, const float* gate, const float* up, long long n) {
  GRID_STRIDE(i, n) {
    float g = gate[i];
    out[i] = g / (1.f + expf(-g)) * up[i];
  }
}

// swiglu_bwd: s = sigmoid(g); dgate = dout*up*s*(1+g*(1-s)); dup = dout*g*s.
extern "C" __global__ void __launch_bounds__(256) swiglu_bwd(float* dgate, float* dup, const float* dout, const float* gate,
                                      const float* up, long long n) {
  GRID_STRIDE(i, n) {
    float g = gate[i], u = up[i], d = dout[i];
    float s = 1.f / (1.f + expf(-g));
    dgate[i] = d * u * s * (1.f + g * (1.f - s));
    dup[i] = d * g * s;
  }
}
