package graph

import (
	"math/rand/v2"
	"testing"
	"time"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/argrl/argrl/kernels"
)

// Forward+backward throughput of one decoder block on the CPU backend:
// C=512, T=256 (B=1), Hq=8, Hkv=2 (GQA), D=64, F=1408 (≈ 8C/3, a multiple
// of 128, as Llama sizes its MLP), q/k/v biases. The cost is Dot(x3, g)
// with g a Late input, gradients for every weight and the block input.
//
//	go test ./kernels/graph/ -run '^$' -bench DecoderBlock -benchtime 5x
//
// "tape" runs the same graph under Gorgonia's TapeMachine (our ops' Do:
// same kernels, plus a host copy of every operand per op, and every node
// including the unused ones); "executor" runs it with our Executor and also
// reports its speed-up over the tape run of the same process.
var benchBlock = blockDims{B: 1, T: 256, C: 512, Hq: 8, Hkv: 2, D: 64, F: 1408, V: 0}

var tapeTokPerSec float64 // set by the tape sub-benchmark

func BenchmarkDecoderBlock(b *testing.B) {
	d := benchBlock
	tokens := float64(d.B * d.T)
	b.Run("tape", func(b *testing.B) {
		bg := buildBlock(b, d, false, 1)
		gv := randn(rand.New(rand.NewPCG(2, 2)), d.B*d.T*d.C, 1)
		vals := map[*gorgonia.Node][]float32{bg.gIn: gv}
		for n, v := range bg.vals {
			vals[n] = v
		}
		for n, v := range vals {
			must(b, gorgonia.Let(n, tensor.New(tensor.WithShape(n.Shape().Clone()...), tensor.WithBacking(v))))
		}
		m := gorgonia.NewTapeMachine(bg.g)
		defer m.Close()
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			must(b, m.RunAll())
			m.Reset()
		}
		tps := tokens * float64(b.N) / time.Since(start).Seconds()
		tapeTokPerSec = tps
		b.ReportMetric(tps, "tokens/s")
	})
	b.Run("executor", func(b *testing.B) {
		bg := buildBlock(b, d, false, 1)
		be := kernels.NewCPU()
		e, err := Compile(bg.g, be, Config{Outputs: bg.grads, Late: []*gorgonia.Node{bg.gIn}})
		must(b, err)
		defer e.Close()
		setAll(b, e, bg.vals)
		must(b, e.Set(bg.gIn, randn(rand.New(rand.NewPCG(2, 2)), d.B*d.T*d.C, 1)))
		st := e.Stats()
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			must(b, e.Forward())
			must(b, e.Backward())
		}
		tps := tokens * float64(b.N) / time.Since(start).Seconds()
		b.ReportMetric(tps, "tokens/s")
		b.ReportMetric(float64(st.SlotElems*4)/(1<<20), "MiB-peak")
		b.ReportMetric(float64(st.NaiveElems*4)/(1<<20), "MiB-naive")
		if tapeTokPerSec > 0 {
			b.ReportMetric(tps/tapeTokPerSec, "x-tape")
		}
	})
}
