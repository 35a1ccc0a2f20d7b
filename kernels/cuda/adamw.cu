// adamw.cu: one AdamW step in place (kernels.RefAdamW); param, grad, m, v [n].
#include "common.cuh"

// adamw: bc1 = 1-β1^t, bc2 = 1-β2^t are computed by the host in float64.
//
//	m = β1 m + (1-β1) g;  v = β2 v + (1-β2) g²
//	p -= lr*((m/bc1)/(sqrt(v/bc2)+eps) + wd*p)
extern "C" __global__ void __launch_bounds__(256) adamw(float* param, const float* grad, float* m, float* v, long long n, float lr,
                                 float beta1, float beta2, float eps, float wd, float bc1, float bc2) {
  GRID_STRIDE(i, n) {
    float g = grad[i];
    float mi = beta1 * m[i] + (1.f - beta1) * g;
    float vi = beta2 * v[i] + (1.f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    float p = param[i];
    param[i] = p - lr * ((mi / bc1) / (sqrtf(vi / bc2) + eps) + wd * p);
  }
}
