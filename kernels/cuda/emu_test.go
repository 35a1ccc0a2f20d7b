package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/kernels/kerneltest"
)

// newEmu starts an emulated backend for a test and stops it at the end.
func newEmu(t *testing.T, opt EmuOptions) *Backend {
	t.Helper()
	be, err := NewEmulated(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := be.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return be
}

// TestEmulatedKernels runs every CUDA kernel on the CPU emulator through
// the backend's own host code (checks, launch shapes, argument packing, the
// GEMM mapping, the pool), against the float64 references:
//   - the full conformance suite (kerneltest.RunAll), with the threads of
//     each block run forward, in reverse, and shuffled under AddressSanitizer
//     (a result that depends on the order is a missing barrier; ASan checks
//     every memory access);
//   - shapes the suite does not reach: several key tiles with GQA groups
//     wider than a block, D = 40 and D = 128, decoding with G = 7, rows
//     longer than a block, two-pass column sums, V > blockDim, top-k/top-p
//     on V = 20000;
//   - the bf16 tensor-core GEMM path;
//   - a bf16 paged KV cache (kvcache_test.go);
//   - the tensor-core attention and the bf16 KV cache (attn_tc_test.go);
//
// and finally checks that every kernel in the .cu sources was launched.

func TestEmulatedKernels(t *testing.T) {
	counts := map[string]int{}
	all := true
	run := func(name string, opt EmuOptions, fn func(t *testing.T, be *Backend)) {
		ran := false
		t.Run(name, func(t *testing.T) {
			ran = true
			be := newEmu(t, opt)
			fn(t, be)
			for k, n := range be.dev.(*emuDevice).counts {
				counts[k] += n
			}
		})
		all = all && ran
	}
	runAll := func(t *testing.T, be *Backend) { kerneltest.RunAll(t, be) }
	run("conformance/forward", EmuOptions{}, runAll)
	run("conformance/reverse", EmuOptions{Order: 1}, runAll)
	run("conformance/shuffled-asan", EmuOptions{Order: 2, Seed: 11, ASan: true}, runAll)
	// cuda-bf16: every op with bf16 activations; its GEMMs are bf16 tensor
	// cores, checked at bf16 tolerance by testTensorCores instead of MatMul
	run("conformance/bf16", EmuOptions{Options: bf16Options}, func(t *testing.T, be *Backend) {
		kerneltest.RunAllExcept(t, be, "MatMul")
		t.Run("tensorcores", func(t *testing.T) { testTensorCores(t, be) })
	})
	for i, order := range []string{"forward", "reverse", "shuffled"} {
		run("shapes/"+order, EmuOptions{Order: i, Seed: 5}, testShapes)
	}
	run("tensorcores", EmuOptions{Options: Options{BF16TensorCores: true}}, testTensorCores)
	run("paged-bf16", EmuOptions{Order: 2, Seed: 3}, testPagedBF16)
	run("attention-tc", EmuOptions{Options: bf16Options, Order: 2, Seed: 4}, testAttentionTC)
	t.Run("coverage", func(t *testing.T) {
		if !all {
			t.Skip("coverage needs every subtest to run")
		}
		kn, err := kernelNames()
		if err != nil {
			t.Fatal(err)
		}
		for f, ks := range kn {
			for _, k := range ks {
				if counts[k] == 0 {
					t.Errorf("kernel %s (%s) was never launched by the emulated tests", k, f)
				}
			}
		}
	})
}

// tb is a tiny test harness over the backend (package kerneltest keeps its
// own unexported).
type tb struct {
	t  *testing.T
	be *Backend
	r  *rand.Rand
}

func (h *tb) vec(n int, s float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = float64(float32((2*h.r.Float64() - 1) * s))
	}
	return x
}

func (h *tb) up(x []float64, dt kernels.DType) kernels.Buffer {
	b := h.be.Alloc(dt, len(x))
	f := make([]float32, len(x))
	for i, v := range x {
		f[i] = float32(v)
	}
	h.be.CopyIn(b, f)
	return b
}

func (h *tb) f32(x []float64) kernels.Buffer { return h.up(x, kernels.F32) }
func (h *tb) zeros(n int) kernels.Buffer     { return h.be.Alloc(kernels.F32, n) }

func (h *tb) down(b kernels.Buffer) []float64 {
	h.t.Helper()
	f := make([]float32, b.Len())
	h.be.CopyOut(f, b)
	if err := h.be.Sync(); err != nil {
		h.t.Fatalf("backend error: %v", err)
	}
	out := make([]float64, len(f))
	for i, v := range f {
		out[i] = float64(v)
	}
	return out
}

// near checks |g−w| ≤ rtol·|w| + atol·max|w| elementwise (the conformance
// suite's rule; ±Inf must match exactly).
func (h *tb) near(what string, got, want []float64, rtol, atol float64) {
	h.t.Helper()
	scale := 0.0
	for _, w := range want {
		if !math.IsInf(w, 0) {
			scale = math.Max(scale, math.Abs(w))
		}
	}
	for i, w := range want {
		g := got[i]
		if math.IsInf(w, 0) {
			if g != w {
				h.t.Errorf("%s[%d] = %v, want %v", what, i, g, w)
				return
			}
			continue
		}
		if !(math.Abs(g-w) <= rtol*math.Abs(w)+atol*scale) {
			h.t.Errorf("%s[%d] = %.9g, want %.9g (rtol %g atol %g·%.3g)", what, i, g, w, rtol, atol, scale)
			return
		}
	}
}

// Tolerances of the conformance suite (see package kerneltest).
const (
	rtolElem, atolElem     = 1e-5, 1e-6
	rtolReduce, atolReduce = 1e-4, 1e-5
	rtolAttn, atolAttn     = 1e-4, 1e-4
)

func testShapes(t *testing.T, be *Backend) {
	h := &tb{t: t, be: be, r: rand.New(rand.NewPCG(3, 4))}
	for _, p := range []kernels.AttnParams{
		// G = 12: the forward block holds 12 heads, the dq block splits them 8 + 4; D = 40 is not a multiple of 32
		{B: 2, Tq: 45, Hq: 12, Hkv: 1, D: 40, S: 2, Tmax: 45, KLen: []int32{45, 33}},
		// G = 20 > 16 rows: two forward blocks per kv head; D = 128, the maximum
		{B: 1, Tq: 37, Hq: 20, Hkv: 1, D: 128, S: 1, Tmax: 37},
		// decoding, Qwen-like G = 7, long cache, permuted slots
		{B: 3, Tq: 1, Hq: 14, Hkv: 2, D: 64, S: 3, Tmax: 80, Slot: []int32{1, 2, 0}, QPos: []int32{70, 12, 40}, KLen: []int32{71, 13, 41}},
		// chunked prefill of two chunks of one sequence sharing slot 0 (dk/dv sum both)
		{B: 2, Tq: 20, Hq: 4, Hkv: 2, D: 24, S: 1, Tmax: 60, Slot: []int32{0, 0}, QPos: []int32{0, 20}, KLen: []int32{20, 40}},
	} {
		testAttention(h, p)
	}

	N, C := 150, 1100 // C > 1024 threads; N > 64: two-pass dw
	x, w, dout := h.vec(N*C, 2), h.vec(C, 1.5), h.vec(N*C, 1)
	out, rstd := h.zeros(N*C), h.zeros(N)
	xb, wb := h.f32(x), h.f32(w)
	be.RMSNorm(out, rstd, xb, wb, N, C, 1e-5)
	wo, wr := make([]float64, N*C), make([]float64, N)
	kernels.RefRMSNorm(wo, wr, x, w, N, C, 1e-5)
	h.near("RMSNorm out", h.down(out), wo, rtolReduce, atolReduce)
	h.near("RMSNorm rstd", h.down(rstd), wr, rtolReduce, atolReduce)
	dx, dw := h.zeros(N*C), h.zeros(C)
	be.RMSNormBackward(dx, dw, h.f32(dout), xb, wb, rstd, N, C)
	wdx, wdw := make([]float64, N*C), make([]float64, C)
	kernels.RefRMSNormBackward(wdx, wdw, dout, x, w, wr, N, C)
	h.near("RMSNorm dx", h.down(dx), wdx, rtolReduce, atolReduce)
	// dw sums 150 rows; the suite's bound is for ≤ 100 terms, so scale it
	h.near("RMSNorm dw", h.down(dw), wdw, rtolReduce, 2*atolReduce)

	Ns, Cs := 300, 300
	xs := h.vec(Ns*Cs, 1)
	sr := h.zeros(Cs)
	be.SumRows(sr, h.f32(xs), Ns, Cs)
	ws := make([]float64, Cs)
	kernels.RefSumRows(ws, xs, Ns, Cs)
	h.near("SumRows N=300", h.down(sr), ws, rtolReduce, 3*atolReduce)

	n := 70001
	a, b := h.vec(n, 1), h.vec(n, 1)
	d := h.zeros(1)
	be.Dot(d, h.f32(a), h.f32(b), n)
	wd := []float64{0}
	kernels.RefDot(wd, a, b, n)
	if g := h.down(d)[0]; math.Abs(g-wd[0]) > 1e-5*math.Sqrt(float64(n))*(1+math.Abs(wd[0])) {
		t.Errorf("Dot n=%d = %v, want %v", n, g, wd[0])
	}

	Nl, V := 3, 5000 // several logits per thread
	xl := h.vec(Nl*V, 10)
	targets := []int32{17, -1, 4999}
	lp, lse, ent := h.zeros(Nl), h.zeros(Nl), h.zeros(Nl)
	xlb := h.f32(xl)
	be.LogProbs(lp, lse, ent, xlb, targets, Nl, V)
	wlp, wlse, went := make([]float64, Nl), make([]float64, Nl), make([]float64, Nl)
	kernels.RefLogProbs(wlp, wlse, went, xl, targets, Nl, V)
	h.near("LogProbs lp", h.down(lp), wlp, rtolReduce, atolReduce)
	h.near("LogProbs lse", h.down(lse), wlse, rtolReduce, atolReduce)
	h.near("LogProbs entropy", h.down(ent), went, rtolReduce, atolReduce)
	dlp := h.vec(Nl, 1)
	dl := h.zeros(Nl * V)
	be.LogProbsBackward(dl, h.f32(dlp), xlb, lse, targets, Nl, V)
	wdl := make([]float64, Nl*V)
	kernels.RefLogProbsBackward(wdl, dlp, xl, wlse, targets, Nl, V)
	h.near("LogProbs backward", h.down(dl), wdl, rtolReduce, atolReduce)

	Nr, H, D, P := 7, 3, 40, 50
	cos32, sin32 := kernels.RopeTables(kernels.RopeInvFreq(D, 1e6), P)
	cos, sin := make([]float64, len(cos32)), make([]float64, len(sin32))
	for i := range cos32 {
		cos[i], sin[i] = float64(cos32[i]), float64(sin32[i])
	}
	pos := []int32{0, 49, 3, 17, 17, 8, 30}
	xr := h.vec(Nr*H*D, 1)
	ro := h.zeros(Nr * H * D)
	be.RoPE(ro, h.f32(xr), h.f32(cos), h.f32(sin), pos, Nr, H, D, false)
	wro := make([]float64, Nr*H*D)
	kernels.RefRoPE(wro, xr, cos, sin, pos, Nr, H, D, false)
	h.near("RoPE D=40", h.down(ro), wro, rtolElem, atolElem)

	testSampleLarge(h)
}

// testAttention checks forward and backward of one case.
func testAttention(h *tb, p kernels.AttnParams) {
	nq, nkv, nr := p.B*p.Tq*p.Hq*p.D, p.S*p.Tmax*p.Hkv*p.D, p.B*p.Tq*p.Hq
	q, k, v, dout := h.vec(nq, 1.5), h.vec(nkv, 1.5), h.vec(nkv, 1), h.vec(nq, 1)
	what := fmt.Sprintf("Attention B=%d Tq=%d Hq=%d Hkv=%d D=%d", p.B, p.Tq, p.Hq, p.Hkv, p.D)
	qb, kb, vb := h.f32(q), h.f32(k), h.f32(v)
	out, lse := h.zeros(nq), h.zeros(nr)
	h.be.Attention(out, lse, qb, kb, vb, p)
	wo, wl := make([]float64, nq), make([]float64, nr)
	kernels.RefAttention(wo, wl, q, k, v, p)
	h.near(what+" out", h.down(out), wo, rtolAttn, atolAttn)
	h.near(what+" lse", h.down(lse), wl, rtolAttn, atolAttn)
	dq, dk, dv := h.f32(h.vec(nq, 9)), h.f32(h.vec(nkv, 9)), h.f32(h.vec(nkv, 9))
	h.be.AttentionBackward(dq, dk, dv, h.f32(dout), qb, kb, vb, out, lse, p)
	wdq, wdk, wdv := make([]float64, nq), make([]float64, nkv), make([]float64, nkv)
	kernels.RefAttentionBackward(wdq, wdk, wdv, dout, q, k, v, wo, wl, p)
	h.near(what+" dq", h.down(dq), wdq, rtolAttn, atolAttn)
	h.near(what+" dk", h.down(dk), wdk, rtolAttn, atolAttn)
	h.near(what+" dv", h.down(dv), wdv, rtolAttn, atolAttn)
}

// testSampleLarge samples V = 20000 rows with top-k and top-p; uniforms
// are kept away from the reference's decision boundaries.
func testSampleLarge(h *tb) {
	N, V := 4, 20000
	x := h.vec(N*V, 4)
	for v := 0; v < V; v++ {
		x[1*V+v] *= 3 // peaked
	}
	xb := h.f32(x)
	for _, p := range []kernels.SampleParams{
		{Temperature: 0.6, TopP: 0.95},
		{Temperature: 1, TopK: 50, TopP: 0.9},
		{Temperature: 0.9, TopK: 1000},
		{Temperature: 0},
	} {
		u := make([]float32, N)
		for n := range u {
			u[n] = safeUniform(h.r, x[n*V:(n+1)*V], V, p)
		}
		want, got := make([]int32, N), make([]int32, N)
		kernels.RefSample(want, x, u, N, V, p)
		h.be.Sample(got, xb, u, N, V, p)
		if err := h.be.Sync(); err != nil {
			h.t.Fatal(err)
		}
		for n := range got {
			if got[n] != want[n] {
				h.t.Errorf("Sample V=%d %+v row %d: got %d, want %d", V, p, n, got[n], want[n])
			}
		}
	}
}

func safeUniform(r *rand.Rand, row []float64, V int, p kernels.SampleParams) float32 {
	pick := func(u float32) int32 {
		id := []int32{0}
		kernels.RefSample(id, row, []float32{u}, 1, V, p)
		return id[0]
	}
	for {
		u := float32(r.Float64()*0.998 + 0.001)
		if a := pick(u); a == pick(u-1e-4) && a == pick(u+1e-4) {
			return u
		}
	}
}

// testTensorCores: with BF16TensorCores a MatMul with a BF16 B rounds A to
// bf16 and accumulates in float32: compare with the reference on the
// rounded A.
func testTensorCores(t *testing.T, be *Backend) {
	h := &tb{t: t, be: be, r: rand.New(rand.NewPCG(8, 9))}
	for _, p := range []kernels.MatMulParams{
		{Batch: 1, M: 9, N: 33, K: 70, TransB: true, Alpha: 1},
		{Batch: 3, M: 5, N: 7, K: 6, Alpha: 0.5, Beta: 1, StrideA: 30, StrideB: 0, StrideC: 35},
	} {
		nA, nB, nC := (p.Batch-1)*p.StrideA+p.M*p.K, (p.Batch-1)*p.StrideB+p.K*p.N, (p.Batch-1)*p.StrideC+p.M*p.N
		a, b, c := h.vec(nA, 1), h.vec(nB, 1), h.vec(nC, 1)
		round := func(x []float64) []float64 {
			r := make([]float64, len(x))
			for i, v := range x {
				r[i] = float64(kernels.Float32FromBF16(kernels.BF16FromFloat32(float32(v))))
			}
			return r
		}
		cb := h.f32(c)
		be.MatMul(cb, h.f32(a), h.up(b, kernels.BF16), p)
		want := append([]float64(nil), c...)
		kernels.RefMatMul(want, round(a), round(b), p)
		h.near(fmt.Sprintf("bf16 tensor-core MatMul %+v", p), h.down(cb), want, rtolReduce, atolReduce)
		// An f32 B (a LoRA adapter) asking for bf16 products is rounded too;
		// without BF16 the product stays float32.
		pb := p
		pb.BF16 = true
		cb = h.f32(c)
		be.MatMul(cb, h.f32(a), h.f32(b), pb)
		h.near(fmt.Sprintf("bf16 tensor-core MatMul, f32 B %+v", pb), h.down(cb), want, rtolReduce, atolReduce)
		cb = h.f32(c)
		be.MatMul(cb, h.f32(a), h.f32(b), p)
		exact := append([]float64(nil), c...)
		kernels.RefMatMul(exact, a, b, p)
		got := h.down(cb)
		h.near(fmt.Sprintf("f32 MatMul in the tensor-core mode %+v", p), got, exact, rtolReduce, atolReduce)
		if d := maxAbsDiff(got, want); d == 0 {
			t.Errorf("f32 × f32 MatMul without BF16 %+v equals the bf16 product: operands rounded", p)
		}
	}
}

func maxAbsDiff(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

// TestEmulatorChecks shows the emulator catches kernel bugs instead of
// hiding them: races (order-dependent results), divergent barriers and warp
// collectives, out-of-bounds writes, mismatched launch arguments; and that
// warp shuffles and block reductions compute what CUDA defines.
func TestEmulatorChecks(t *testing.T) {
	for _, asan := range []bool{false, true} {
		t.Run(fmt.Sprintf("asan=%v", asan), func(t *testing.T) {
			be := newEmu(t, EmuOptions{ASan: asan})
			d := be.dev.(*emuDevice)
			alloc := func(n int) devPtr {
				p, err := d.alloc(int64(4 * n))
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			read := func(p devPtr, n int) []float32 {
				b := make([]float32, n)
				if err := d.dtoh(f32bytes(b), p); err != nil {
					t.Fatal(err)
				}
				return b
			}
			one := dim3{1, 1, 1}

			out := alloc(64 * 4)
			if err := d.launch("emu_shfl", one, dim3{64, 1, 1}, []arg{pArg(out)}); err != nil {
				t.Fatal(err)
			}
			raw := read(out, 64*4)
			for tid := 0; tid < 64; tid++ {
				lane, base := tid&31, tid&^31
				down, up := tid, tid
				if lane+3 < 32 {
					down = tid + 3
				}
				if lane-2 >= 0 {
					up = tid - 2
				}
				want := []int{base + (lane ^ 5), down, up, base + (lane*7)&31}
				for k, w := range want {
					if g := int(math.Float32bits(raw[4*tid+k])); g != w {
						t.Errorf("shuffle kind %d lane %d: got %d, want %d", k, tid, g, w)
					}
				}
			}

			in, sums := alloc(3*96), alloc(3)
			vals := make([]float32, 3*96)
			for i := range vals {
				vals[i] = float32(i%13) - 6
			}
			if err := d.htod(in, f32bytes(vals)); err != nil {
				t.Fatal(err)
			}
			if err := d.launch("emu_block_sum", dim3{3, 1, 1}, dim3{96, 1, 1}, []arg{pArg(sums), pArg(in)}); err != nil {
				t.Fatal(err)
			}
			for b, g := range read(sums, 3) {
				w := float32(0)
				for _, v := range vals[b*96 : (b+1)*96] {
					w += v
				}
				if g != w {
					t.Errorf("block_sum block %d = %v, want %v", b, g, w)
				}
			}

			// A missing __syncthreads: forward order reads stale shared memory
			// for all but the last thread; another order gives another answer.
			race := alloc(128)
			results := map[string]bool{}
			for order := 0; order < 2; order++ {
				d.order = order
				if err := d.launch("emu_missing_sync", one, dim3{128, 1, 1}, []arg{pArg(race)}); err != nil {
					t.Fatal(err)
				}
				results[fmt.Sprint(read(race, 128))] = true
			}
			d.order = 0
			if len(results) != 2 {
				t.Errorf("a race gave the same result in forward and reverse order")
			}

			for _, c := range []struct{ kernel, want string }{
				{"emu_divergent_sync", "deadlock"},
				{"emu_divergent_shfl", "deadlock"},
			} {
				err := d.launch(c.kernel, one, dim3{64, 1, 1}, []arg{pArg(out)})
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: error %v, want one mentioning %q", c.kernel, err, c.want)
				} else {
					t.Logf("%s: %v", c.kernel, err)
				}
			}
			if err := d.launch("emu_oob", one, dim3{32, 1, 1}, []arg{pArg(race), iArg(128)}); err == nil {
				t.Errorf("out-of-bounds write not reported")
			} else if t.Logf("out-of-bounds write: %.300s", err); asan {
				return // the process died, as ASan does; nothing more to run on it
			}
			if err := d.launch("emu_oob", one, dim3{32, 1, 1}, []arg{pArg(race)}); err == nil || !strings.Contains(err.Error(), "parameters") {
				t.Errorf("launch with a missing argument: error %v", err)
			}
			if err := d.launch("emu_oob", one, dim3{32, 1, 1}, []arg{iArg(1), iArg(128)}); err == nil {
				t.Errorf("launch with an int for a pointer: no error")
			}
		})
	}
}

// Without a C++ compiler the emulated backend fails to open with an error
// that says what is missing, through kernels.Open as model.backend does.
func TestEmulatorNeedsCompiler(t *testing.T) {
	t.Setenv("CXX", "/nonexistent/g++")
	be, err := kernels.Open("cuda-emu")
	if err == nil {
		be.Close()
		t.Fatal("cuda-emu opened without a compiler")
	}
	if !strings.Contains(err.Error(), "needs a C++17 compiler") || !strings.Contains(err.Error(), "install g++") {
		t.Errorf("error %q does not say a C++ compiler is missing", err)
	}
}
