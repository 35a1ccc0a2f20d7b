package kernels

import (
	"math"
	"testing"

	"github.com/argrl/argrl/kernels/internal/vec"
)

// expf is the backend's scalar exp: vec.Expf, the reference of the vec.Exp
// assembly that the softmax, log-prob and SwiGLU loops use (bit-identical,
// see kernels/internal/vec).
var expf = vec.Expf

// expf must be within 2e-7 relative of exp over the normal float32 range,
// exact at 0, and handle the edges (overflow, flush to zero, NaN, -Inf).
func TestExpf(t *testing.T) {
	worst := 0.0
	for x := float32(-87.3); x < 88.7; x += 0.0007 {
		want := math.Exp(float64(x))
		if r := math.Abs(float64(expf(x))-want) / want; r > worst {
			worst = r
		}
	}
	if worst > 2e-7 {
		t.Errorf("expf worst relative error %.3g > 2e-7", worst)
	}
	if expf(0) != 1 {
		t.Errorf("expf(0) = %v", expf(0))
	}
	if v := expf(89); !math.IsInf(float64(v), 1) {
		t.Errorf("expf(89) = %v, want +Inf", v)
	}
	if v := expf(float32(math.Inf(-1))); v != 0 {
		t.Errorf("expf(-Inf) = %v, want 0", v)
	}
	if v := expf(-100); v != 0 {
		t.Errorf("expf(-100) = %v, want 0", v)
	}
	if v := expf(float32(math.NaN())); v == v {
		t.Errorf("expf(NaN) = %v, want NaN", v)
	}
}
