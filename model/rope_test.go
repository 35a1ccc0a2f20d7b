package model

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/argrl/argrl/kernels"
)

// TestRopeTablesAgainstTorch: Llama-3 rope_scaling frequencies equal
// PyTorch's float32 computation (Hugging Face's formula) to the last bit
// or two, and the tables agree to float32 cos/sin accuracy (the fixture of
// kernels/testdata/torch_ref.json, written by make fixtures).
func TestRopeTablesAgainstTorch(t *testing.T) {
	raw, err := os.ReadFile("../kernels/testdata/torch_ref.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		RoPELlama3 struct {
			D                        int
			Theta, Factor, Low, High float64
			Orig                     int
			Pos                      []int
			InvFreq                  []float64 `json:"inv_freq"`
			Cos, Sin                 []float64
		} `json:"rope_llama3"`
	}
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	r := fx.RoPELlama3
	if len(r.InvFreq) != r.D/2 || r.D == 0 {
		t.Fatalf("fixture rope_llama3 incomplete")
	}
	c := &Config{HeadDim: r.D, RopeTheta: r.Theta, RopeScaling: RopeScaling{Type: "llama3", Factor: r.Factor,
		LowFreqFactor: r.Low, HighFreqFactor: r.High, OriginalMaxPositionEmbeddings: r.Orig}}
	inv := c.ropeInvFreq()
	for i, w := range r.InvFreq {
		if d := math.Abs(float64(inv[i]) - w); d > 2.5e-7*w {
			t.Errorf("inv_freq[%d] = %.9g, PyTorch %.9g", i, inv[i], w)
		}
	}
	maxPos := r.Pos[len(r.Pos)-1] + 1
	cos, sin := kernels.RopeTables(inv, maxPos)
	h := r.D / 2
	for k, p := range r.Pos {
		for i := 0; i < h; i++ {
			wc, ws := r.Cos[k*h+i], r.Sin[k*h+i]
			if math.Abs(float64(cos[p*h+i])-wc) > 2e-6 || math.Abs(float64(sin[p*h+i])-ws) > 2e-6 {
				t.Errorf("pos %d i %d: cos %v sin %v, PyTorch %v %v", p, i, cos[p*h+i], sin[p*h+i], wc, ws)
			}
		}
	}
}

// TestRopeScalingBands checks the rope_scaling regimes with hand-computed
// values for D = 8, theta = 1e4 (inverse frequencies 1, 0.1, 0.01, 0.001;
// wavelengths 2π, 20π, 200π, 2000π):
//
//	llama3, original_max_position_embeddings 16, factor 8, low 1, high 4:
//	  i=0: 4 ≤ 2π ≤ 16, s = (16/2π − 1)/3 = 0.515493, inv = (1−s)/8 + s = 0.5760564
//	  i≥1: wavelength > 16, inv/8
//	llama3, original 64 (high-frequency cutoff 16): i=0 unchanged (2π < 16),
//	  i=1: s = (64/20π − 1)/3 = 0.0061972, inv = 0.1·((1−s)/8 + s) = 0.01304226
//	linear, factor 4: inv/4
func TestRopeScalingBands(t *testing.T) {
	const D, P = 8, 50
	check := func(sc RopeScaling, want []float64) {
		t.Helper()
		c := &Config{HeadDim: D, RopeTheta: 10000, RopeScaling: sc}
		inv := c.ropeInvFreq()
		for i, w := range want {
			if math.Abs(float64(inv[i])-w) > 2e-6*w {
				t.Errorf("%+v: inv_freq[%d] = %.8g, want %.8g", sc, i, inv[i], w)
			}
		}
		cs, sn := kernels.RopeTables(inv, P)
		p := 37
		for i := range want {
			a := float64(p) * float64(inv[i])
			if math.Abs(float64(cs[p*D/2+i])-math.Cos(a)) > 1e-5 || math.Abs(float64(sn[p*D/2+i])-math.Sin(a)) > 1e-5 {
				t.Errorf("%+v: table at p=%d i=%d disagrees with inv_freq", sc, p, i)
			}
		}
	}
	check(RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 16},
		[]float64{0.5760564, 0.1 / 8, 0.01 / 8, 0.001 / 8})
	check(RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 64},
		[]float64{1, 0.01304226, 0.01 / 8, 0.001 / 8})
	check(RopeScaling{Type: "linear", Factor: 4}, []float64{0.25, 0.025, 0.0025, 0.00025})
	check(RopeScaling{}, []float64{1, 0.1, 0.01, 0.001})
}
