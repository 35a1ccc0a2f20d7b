package kerneltest

import (
	"math"
	"testing"

	"github.com/argrl/argrl/kernels"
)

// testRopeTables checks RopeTables against cos/sin of p·theta^(−2i/D) and
// the Llama-3 rope_scaling regimes with hand-computed values for D = 8,
// theta = 1e4 (inverse frequencies 1, 0.1, 0.01, 0.001; wavelengths 2π,
// 20π, 200π, 2000π):
//
//	original_max_position_embeddings 16, factor 8, low 1, high 4:
//	  i=0: 4 ≤ 2π ≤ 16, s = (16/2π − 1)/3 = 0.515493, inv = (1−s)/8 + s = 0.5760564
//	  i≥1: wavelength > 16, inv/8
//	original 64 (high-frequency cutoff 16): i=0 unchanged (2π < 16),
//	  i=1: s = (64/20π − 1)/3 = 0.0061972, inv = 0.1·((1−s)/8 + s) = 0.01304226
func testRopeTables(t *testing.T) {
	D, P := 8, 50
	cos, sin := kernels.RopeTables(D, P, 10000, nil)
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
	check := func(sc *kernels.RopeScaling, want []float64) {
		t.Helper()
		if err := sc.Validate(); err != nil {
			t.Fatalf("Validate(%+v): %v", sc, err)
		}
		inv := kernels.RopeInvFreq(D, 10000, sc)
		for i, w := range want {
			if math.Abs(float64(inv[i])-w) > 2e-6*w {
				t.Errorf("llama3 %+v: inv_freq[%d] = %.8g, want %.8g", *sc, i, inv[i], w)
			}
		}
		c, s := kernels.RopeTables(D, P, 10000, sc)
		p := 37
		for i := range want {
			a := float64(p) * float64(inv[i])
			if math.Abs(float64(c[p*D/2+i])-math.Cos(a)) > 1e-5 || math.Abs(float64(s[p*D/2+i])-math.Sin(a)) > 1e-5 {
				t.Errorf("llama3 table at p=%d i=%d disagrees with inv_freq", p, i)
			}
		}
	}
	check(&kernels.RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 16},
		[]float64{0.5760564, 0.1 / 8, 0.01 / 8, 0.001 / 8})
	check(&kernels.RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 64},
		[]float64{1, 0.01304226, 0.01 / 8, 0.001 / 8})
	check(&kernels.RopeScaling{Type: "linear", Factor: 4}, []float64{0.25, 0.025, 0.0025, 0.00025})
	if err := (&kernels.RopeScaling{Type: "yarn", Factor: 4}).Validate(); err == nil {
		t.Errorf("Validate accepted unsupported rope_type yarn")
	}
	if c, s := kernels.RopeTables(7, 4, 10000, nil); c != nil || s != nil {
		t.Errorf("RopeTables accepted odd D")
	}
}
