package model

// Throughput of the runtime model on the small benchmark model
// (testdata/bench/small: qwen2, C=512, L=8, Hq=8, Hkv=2, D=64, F=1536,
// V=8192, tied, 28M parameters), generated at bench time by
//
//	/usr/bin/python3 testdata/make_fixtures.py --small $TMPDIR/argrl-small
//
// (cached there; skipped with a message when python3-torch is missing).
//
//	go test ./model/ -run '^$' -bench . -benchtime 3x                 (gonum BLAS)
//	go test -tags openblas ./model/ -run '^$' -bench . -benchtime 3x  (OpenBLAS)
//
// Train: one Step (forward + backward, LoRA r=32 on every linear layer,
// dropout 0.05) on B×T tokens. Forward: scoring (no dropout, entropy
// included). Decode: one Decode call over B slots after a 64-token prefill
// forked into every slot, LoRA unmerged vs merged (interleaved, as a ratio).
// This machine's cores are shared: compare ratios, not absolute rates.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/argrl/argrl/kernels"
)

func smallModelDir(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "argrl-small")
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err == nil {
		return dir
	}
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import torch, numpy").Run(); err != nil {
		b.Skipf("small bench model: %s with torch and numpy is not available (%v); install Debian's python3-torch", py, err)
	}
	out, err := exec.Command(py, "../testdata/make_fixtures.py", "--small", dir).CombinedOutput()
	if err != nil {
		b.Fatalf("make_fixtures.py --small: %v\n%s", err, out)
	}
	return dir
}

func benchSeqs(B, T, V int) [][]int32 {
	seqs := make([][]int32, B)
	for b := range seqs {
		seqs[b] = make([]int32, T)
		for t := range seqs[b] {
			seqs[b][t] = int32((b*7919 + t*104729) % V)
		}
	}
	return seqs
}

func BenchmarkTrainStep(b *testing.B) {
	dir := smallModelDir(b)
	for _, shape := range [][2]int{{1, 256}, {4, 128}} {
		B, T := shape[0], shape[1]
		b.Run(fmt.Sprintf("B%d_T%d", B, T), func(b *testing.B) {
			m, err := Open(dir, kernels.NewCPU(), Options{LoRA: DefaultLoRA()})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			seqs := benchSeqs(B, T, m.Config.VocabSize)
			grad := weightedGrad(seqs, false)
			if err := m.Step(seqs, grad); err != nil { // build + compile outside the timer
				b.Fatal(err)
			}
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				if err := m.Step(seqs, grad); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(B*T*b.N)/time.Since(start).Seconds(), "tokens/s")
		})
	}
}

func BenchmarkForward(b *testing.B) {
	dir := smallModelDir(b)
	m, err := Open(dir, kernels.NewCPU(), Options{LoRA: DefaultLoRA()})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	const B, T = 4, 128
	seqs := benchSeqs(B, T, m.Config.VocabSize)
	if _, err := m.Forward(seqs, true); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if _, err := m.Forward(seqs, true); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(B*T*b.N)/time.Since(start).Seconds(), "tokens/s")
}

// BenchmarkDecode times Decode steps of an unmerged-LoRA model and of a
// merged copy, interleaved step by step in the same process (so machine
// load affects both alike), and reports both rates and their ratio.
func BenchmarkDecode(b *testing.B) {
	dir := smallModelDir(b)
	open := func(merge bool) *Model {
		m, err := Open(dir, kernels.NewCPU(), Options{LoRA: DefaultLoRA()})
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range m.Trainable() { // nonzero B, so the adapter does work
			m.be.Fill(p.W, 0.01)
		}
		if merge {
			if err := m.Merge(); err != nil {
				b.Fatal(err)
			}
		}
		return m
	}
	unmerged, merged := open(false), open(true)
	defer unmerged.Close()
	defer merged.Close()
	const prompt, steps = 64, 64
	for _, B := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("B%d", B), func(b *testing.B) {
			slots := make([]int, B)
			toks := make([]int32, B)
			for i := range slots {
				slots[i] = i
				toks[i] = int32(i + 3)
			}
			var caches [2]*KVCache
			for i, m := range []*Model{unmerged, merged} {
				d, err := m.NewKVCache(B, prompt+steps+1, B)
				if err != nil {
					b.Fatal(err)
				}
				defer d.Close()
				caches[i] = d
			}
			ids := benchSeqs(1, prompt, unmerged.Config.VocabSize)[0]
			reset := func() {
				for _, d := range caches {
					if err := d.Reset(0); err != nil {
						b.Fatal(err)
					}
					if _, err := d.Prefill(0, ids); err != nil {
						b.Fatal(err)
					}
					if err := d.Fork(0, slots[1:]); err != nil {
						b.Fatal(err)
					}
				}
			}
			reset()
			b.ResetTimer()
			var elapsed [2]time.Duration
			for i := range b.N {
				if i%steps == 0 && i > 0 {
					b.StopTimer()
					reset()
					b.StartTimer()
				}
				for j, d := range caches {
					start := time.Now()
					if _, err := d.Decode(slots, toks); err != nil {
						b.Fatal(err)
					}
					elapsed[j] += time.Since(start)
				}
			}
			u := float64(B*b.N) / elapsed[0].Seconds()
			m := float64(B*b.N) / elapsed[1].Seconds()
			b.ReportMetric(u, "unmerged-tok/s")
			b.ReportMetric(m, "merged-tok/s")
			b.ReportMetric(m/u, "merged/unmerged")
		})
	}
}
