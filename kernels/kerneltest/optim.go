package kerneltest

import (
	"fmt"
	"math"

	"github.com/argrl/argrl/kernels"
)

// testDropout: output equals the reference (mask bit-exact from
// DropoutUniform), same seed reproduces, another seed differs, the kept
// fraction is near 1−p, p = 0 is the identity, p = 1 drops all, in place,
// and the same call on dout is the backward (finite differences).
func testDropout(h *harness) {
	t := h.t
	n := 4099
	x := h.vec(n, 2)
	xb := h.f32(x)
	p, seed := float32(0.3), uint64(0xfeed)
	a, b := h.zeros(n), h.zeros(n)
	h.b.Dropout(a, xb, n, p, seed)
	h.b.Dropout(b, xb, n, p, seed)
	want := make([]float64, n)
	kernels.RefDropout(want, x, n, p, seed)
	ga, gb := h.down(a), h.down(b)
	approx(t, "Dropout", ga, want, rtolElem, atolElem)
	kept := 0
	for i := range ga {
		if ga[i] != gb[i] {
			t.Fatalf("Dropout not reproducible at %d: %v vs %v", i, ga[i], gb[i])
		}
		if (ga[i] == 0) != (want[i] == 0) {
			t.Fatalf("Dropout mask differs from the reference at %d", i)
		}
		if want[i] != 0 {
			kept++
		}
	}
	if f := float64(kept) / float64(n); math.Abs(f-0.7) > 0.03 {
		t.Errorf("Dropout kept fraction %.3f, want ≈ 0.7", f)
	}
	h.b.Dropout(b, xb, n, p, seed+1)
	if diff := countDiff(ga, h.down(b)); diff < n/10 {
		t.Errorf("Dropout with another seed changed only %d of %d values", diff, n)
	}
	h.b.Dropout(b, xb, n, 0, seed)
	approx(t, "Dropout p=0", h.down(b), x, 0, 0)
	h.b.Dropout(b, xb, n, 1, seed)
	approx(t, "Dropout p=1", h.down(b), make([]float64, n), 0, 0)
	ip := h.f32(x)
	h.b.Dropout(ip, ip, n, p, seed)
	approx(t, "Dropout in place", h.down(ip), want, rtolElem, atolElem)

	m := 50
	xs, dout := h.vec(m, 1), h.vec(m, 1)
	dx := make([]float64, m)
	kernels.RefDropout(dx, dout, m, 0.5, 9)
	o := make([]float64, m)
	fdCheck(t, "Dropout backward", func() []float64 { kernels.RefDropout(o, xs, m, 0.5, 9); return o },
		dout, [][]float64{xs}, [][]float64{dx})
}

func countDiff(a, b []float64) int {
	d := 0
	for i := range a {
		if a[i] != b[i] {
			d++
		}
	}
	return d
}

// testAdamW: six steps with changing gradients, weight decay and bias
// correction, param/m/v against the reference after every step.
func testAdamW(h *harness) {
	t := h.t
	n := 1037
	param := h.vec(n, 1)
	m, v := make([]float64, n), make([]float64, n)
	pb, mb, vb := h.f32(param), h.zeros(n), h.zeros(n)
	for step := 1; step <= 6; step++ {
		hp := kernels.AdamWParams{LR: 1e-2 / float32(step), Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1, Step: step}
		g := h.vec(n, 0.5)
		if step == 3 {
			for i := 0; i < n; i += 7 {
				g[i] = 0
			}
		}
		h.b.AdamW(pb, h.f32(g), mb, vb, n, hp)
		kernels.RefAdamW(param, g, m, v, n, hp)
		what := fmt.Sprintf("AdamW step %d", step)
		approx(t, what+" param", h.down(pb), param, rtolReduce, atolReduce)
		approx(t, what+" m", h.down(mb), m, rtolReduce, atolReduce)
		approx(t, what+" v", h.down(vb), v, rtolReduce, atolReduce)
	}
}

// testSample: greedy (ties to the lowest id), temperature with top-p,
// top-k, both, and no truncation, on random, peaked and flat rows, over a
// small and a large vocabulary. Uniforms are drawn away from the
// reference's decision boundaries, so the ids must match exactly (on the
// geometric row u is near 1, which picks the last kept token); a second
// call with the same uniforms must give the same ids; u = 0 picks the top
// token.
func testSample(h *harness) {
	t := h.t
	params := []kernels.SampleParams{
		{Temperature: 0},
		{Temperature: 0.6, TopP: 0.95},
		{Temperature: 1, TopK: 5},
		{Temperature: 0.8, TopK: 10, TopP: 0.5},
		{Temperature: 1},
		{Temperature: 1.3, TopP: 0.9},
	}
	for _, V := range []int{50, 3000} {
		N := 8
		x := h.vec(N*V, 3)
		for v := 0; v < V; v++ {
			x[1*V+v] = float64(float32(0.01 * float64(v%7))) // flat row with ties
			x[2*V+v] *= 8                                    // peaked row
		}
		x[0*V+4], x[0*V+9] = 20, 20 // greedy tie: id 4 wins
		for v := 0; v < V; v++ {    // geometric row: p ∝ 0.8^rank, ranks shuffled
			x[3*V+(v*7+3)%V] = float64(float32(float64(v) * math.Log(0.8)))
		}
		xb := h.f32(x)
		for _, p := range params {
			u := make([]float32, N)
			want := make([]int32, N)
			for n := 0; n < N; n++ {
				u[n] = safeUniform(h, x[n*V:(n+1)*V], V, p)
			}
			u[3] = 0.9995 // near 1: the last kept token, so the kept set must match
			kernels.RefSample(want, x, u, N, V, p)
			got, again := make([]int32, N), make([]int32, N)
			h.b.Sample(got, xb, u, N, V, p)
			h.b.Sample(again, xb, u, N, V, p)
			h.sync()
			for n := 0; n < N; n++ {
				if got[n] != want[n] {
					t.Errorf("Sample V=%d %+v row %d u=%v: got %d, want %d", V, p, n, u[n], got[n], want[n])
				}
				if again[n] != got[n] {
					t.Errorf("Sample V=%d %+v row %d not deterministic: %d then %d", V, p, n, got[n], again[n])
				}
			}
			zero := make([]float32, N)
			kernels.RefSample(want, x, zero, N, V, kernels.SampleParams{})
			h.b.Sample(got, xb, zero, N, V, p)
			h.sync()
			for n := 0; n < N; n++ {
				if got[n] != want[n] {
					t.Errorf("Sample V=%d %+v row %d u=0: got %d, want the top token %d", V, p, n, got[n], want[n])
				}
			}
		}
	}
}

// safeUniform draws u until the reference picks the same token for u and
// u ± 1e-4, i.e. u is not near a cumulative-mass boundary.
func safeUniform(h *harness, row []float64, V int, p kernels.SampleParams) float32 {
	pick := func(u float32) int32 {
		id := make([]int32, 1)
		kernels.RefSample(id, row, []float32{u}, 1, V, p)
		return id[0]
	}
	for {
		u := float32(h.r.Float64()*0.998 + 0.001)
		if a := pick(u); a == pick(u-1e-4) && a == pick(u+1e-4) {
			return u
		}
	}
}
