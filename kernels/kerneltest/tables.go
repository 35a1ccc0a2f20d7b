package kerneltest

import (
	"math"
	"testing"

	"github.com/argrl/argrl/kernels"
)

// testRopeTables checks RopeTables against cos/sin of p·theta^(−2i/D) for
// the default frequencies (the model package tests rope_scaling), and that
// RopeInvFreq refuses an odd head dim.
func testRopeTables(t *testing.T) {
	D, P := 8, 50
	cos, sin := kernels.RopeTables(kernels.RopeInvFreq(D, 10000), P)
	if len(cos) != P*D/2 || len(sin) != P*D/2 {
		t.Fatalf("RopeTables sizes %d, %d, want %d", len(cos), len(sin), P*D/2)
	}
	for p := 0; p < P; p++ {
		for i := 0; i < D/2; i++ {
			a := float64(p) * math.Pow(10000, -float64(2*i)/float64(D))
			if math.Abs(float64(cos[p*D/2+i])-math.Cos(a)) > 1e-5 || math.Abs(float64(sin[p*D/2+i])-math.Sin(a)) > 1e-5 {
				t.Fatalf("RopeTables p=%d i=%d: cos %v sin %v, want %v %v", p, i, cos[p*D/2+i], sin[p*D/2+i], math.Cos(a), math.Sin(a))
			}
		}
	}
	if inv := kernels.RopeInvFreq(7, 10000); inv != nil {
		t.Errorf("RopeInvFreq accepted odd D")
	}
	if c, s := kernels.RopeTables(nil, 4); c != nil || s != nil {
		t.Errorf("RopeTables accepted no frequencies")
	}
}
