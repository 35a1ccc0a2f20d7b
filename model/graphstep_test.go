package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/kernels/cuda"
)

// TestDecodeGraphsMatchEager: on cuda-emu, decode steps run as step graphs
// (each batch padded to its bucket, captured once, then replayed with new
// side inputs in the argument arena) give logits bit-identical to the same
// steps launched op by op, over steps whose batch sizes, members and
// lengths change (pages fill, tables grow); and graphs were replayed, not
// only captured. On cuda-emu-bf16 Qwen2's q/k/v biases ride in the fused
// projection's cuBLASLt epilogue (gemmLt): those calls are captured and
// replayed too, and no step goes eager.
func TestDecodeGraphsMatchEager(t *testing.T) {
	if testing.Short() {
		t.Skip("cuda-emu: -short")
	}
	for _, name := range []string{"cuda-emu", "cuda-emu-bf16"} {
		t.Run(name, func(t *testing.T) { decodeGraphsMatchEager(t, name) })
	}
}

func decodeGraphsMatchEager(t *testing.T, name string) {
	be, err := kernels.Open(name)
	if err != nil {
		t.Skipf("%s: %v", name, err)
	}
	defer be.Close()
	cb := be.(*cuda.Backend)
	m, err := Open("../testdata/models/qwen2-f32", be, Options{MaxLen: 96})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	V := m.Config.VocabSize
	r := rand.New(rand.NewPCG(33, 1))
	const S = 6
	prompts := make([][]int32, S)
	for s := range prompts {
		prompts[s] = make([]int32, 3+5*s) // 3 .. 28 tokens: one or two pages
		for i := range prompts[s] {
			prompts[s][i] = int32(4 + r.IntN(V-4))
		}
	}
	// decode steps: the sequences of each (batch 3, 3, 5, 2, 3, 6, 1, 3, ...)
	sched := [][]int{{0, 1, 2}, {0, 1, 2}, {0, 1, 2, 3, 4}, {1, 3}, {0, 1, 2}, {0, 1, 2, 3, 4, 5}, {5}, {2, 4, 5}}
	for range 3 {
		sched = append(sched, []int{0, 1, 2}, []int{3, 4, 5, 0}, []int{1, 2})
	}
	tokens := make([][]int32, len(sched))
	for i, seqs := range sched {
		for range seqs {
			tokens[i] = append(tokens[i], int32(4+r.IntN(V-4)))
		}
	}
	run := func(graphs bool) [][]float32 {
		if err := cb.SetGraphs(graphs); err != nil {
			t.Fatal(err)
		}
		d, err := m.NewKVCache(S, 96, S)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		for s, p := range prompts {
			if _, err := d.Prefill(s, p); err != nil {
				t.Fatal(err)
			}
		}
		var out [][]float32
		for i, seqs := range sched {
			lg, err := d.Decode(seqs, tokens[i])
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			h := make([]float32, len(seqs)*V)
			be.CopyOut(h, lg)
			if err := be.Sync(); err != nil {
				t.Fatal(err)
			}
			out = append(out, h)
		}
		return out
	}
	eager := run(false)
	before := cb.GraphStats()
	graphs := run(true)
	st := cb.GraphStats()
	st.Captures -= before.Captures
	st.Replays -= before.Replays
	st.Eager -= before.Eager
	st.LtCalls -= before.LtCalls
	t.Logf("%d decode steps: %d captures, %d replays, %d eager, %d cuBLASLt calls in graphs (%s)", len(sched), st.Captures, st.Replays, st.Eager, st.LtCalls, st.CaptureErr)
	for i := range sched {
		for j := range eager[i] {
			if math.Float32bits(eager[i][j]) != math.Float32bits(graphs[i][j]) {
				t.Fatalf("step %d (batch %d), row %d, logit %d: eager %v, graph %v", i, len(sched[i]), j/V, j%V, eager[i][j], graphs[i][j])
			}
		}
	}
	if st.Captures+st.Replays+st.Eager != len(sched) || st.Replays < len(sched)/2 {
		t.Errorf("%d steps: %d captures, %d replays, %d eager; want every step as a graph, most replayed", len(sched), st.Captures, st.Replays, st.Eager)
	}
	if name == "cuda-emu-bf16" && (st.Eager != 0 || st.LtCalls < len(sched)*m.Config.NumLayers) {
		t.Errorf("%d steps: %d eager, %d cuBLASLt calls in graphs; want none eager and one bias GEMM per layer per step", len(sched), st.Eager, st.LtCalls)
	}
}
