package model

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/argrl/argrl/model/safetensors"
)

// hostLogSoftmax returns log p(target) from one row of logits (float64 sums).
func hostLogSoftmax(row []float32, target int32) float64 {
	mx := math.Inf(-1)
	for _, v := range row {
		mx = math.Max(mx, float64(v))
	}
	var s float64
	for _, v := range row {
		s += math.Exp(float64(v) - mx)
	}
	return float64(row[target]) - mx - math.Log(s)
}

// decodeLogProbs scores seqs through the KV cache: each sequence's first
// prompt[b] tokens are prefilled into its own slot (in chunks of `chunk`
// rows), then the rest is decoded one token per step as a ragged batch;
// sequence 0 is also forked after its prompt into an extra slot and decoded
// there alongside. It returns lp[b][t] like Model.LogProbs, plus the forked
// copy of row 0 and the logits after each full sequence.
func decodeLogProbs(t *testing.T, m *Model, seqs [][]int32, prompt []int, chunk int) (lp [][]float32, fork []float32, last [][]float32) {
	t.Helper()
	V := m.Config.VocabSize
	B := len(seqs)
	d, err := m.NewKVCache(B+1, m.MaxLen(), B+1)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if chunk > 0 {
		d.rows = chunk
	}
	lp = make([][]float32, B)
	last = make([][]float32, B)
	next := make([][]float32, B+1) // logits predicting the next token of each slot
	host := make([]float32, (B+1)*V)
	for b, s := range seqs {
		lp[b] = make([]float32, len(s))
		buf, err := d.Prefill(b, s[:prompt[b]])
		if err != nil {
			t.Fatal(err)
		}
		m.be.CopyOut(host[:V], buf)
		next[b] = append([]float32(nil), host[:V]...)
		// Log-probs inside the prompt come from a prefix prefill in a scratch
		// slot: prefill s[:t] and read the logits for token t.
		for i := 1; i < prompt[b]; i++ {
			if err := d.Reset(B); err != nil {
				t.Fatal(err)
			}
			buf, err := d.Prefill(B, s[:i])
			if err != nil {
				t.Fatal(err)
			}
			m.be.CopyOut(host[:V], buf)
			lp[b][i] = float32(hostLogSoftmax(host[:V], s[i]))
		}
	}
	if err := d.Reset(B); err != nil {
		t.Fatal(err)
	}
	if err := d.Fork(0, []int{B}); err != nil {
		t.Fatal(err)
	}
	next[B] = next[0]
	fork = make([]float32, len(seqs[0]))
	pos := append([]int(nil), prompt...)
	pos = append(pos, prompt[0]) // the fork follows sequence 0
	seqOf := func(slot int) []int32 {
		if slot == B {
			return seqs[0]
		}
		return seqs[slot]
	}
	for {
		var slots []int
		var toks []int32
		for slot := 0; slot <= B; slot++ {
			s := seqOf(slot)
			if pos[slot] < len(s) {
				// record the log-prob of the token about to be fed
				v := float32(hostLogSoftmax(next[slot], s[pos[slot]]))
				if slot == B {
					fork[pos[slot]] = v
				} else {
					lp[slot][pos[slot]] = v
				}
				slots = append(slots, slot)
				toks = append(toks, s[pos[slot]])
			} else if slot < B && last[slot] == nil {
				last[slot] = next[slot]
			}
		}
		if len(slots) == 0 {
			break
		}
		buf, err := d.Decode(slots, toks)
		if err != nil {
			t.Fatal(err)
		}
		m.be.CopyOut(host[:len(slots)*V], buf)
		for i, slot := range slots {
			next[slot] = append([]float32(nil), host[i*V:(i+1)*V]...)
			pos[slot]++
		}
	}
	for b := range seqs {
		if d.Len(b) != len(seqs[b]) {
			t.Fatalf("slot %d holds %d tokens, want %d", b, d.Len(b), len(seqs[b]))
		}
	}
	return lp, fork, last
}

// TestDecodeMatchesGraph: the KV-cache path gives the training graph's
// log-probs (≤ 1e-5) with LoRA on and off on every fixture, through
// chunked prefill, fork and ragged decode; its last logits match PyTorch.
func TestDecodeMatchesGraph(t *testing.T) {
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			ref := readFixtureRef(t, name)
			m := openFixture(t, name, withAdapter(name))
			f, err := safetensors.Open(filepath.Join(fixtures, name, "reference.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			prompt := []int{5, 3, 7, 1}
			var byState [2][][]float32
			for i, on := range []bool{true, false} {
				if err := m.SetAdapters(on); err != nil {
					t.Fatal(err)
				}
				want, err := m.LogProbs(ref.Tokens, on)
				if err != nil {
					t.Fatal(err)
				}
				got, fork, last := decodeLogProbs(t, m, ref.Tokens, prompt, 3)
				byState[i] = got
				d := maxDiff(got, want)
				df := maxDiff([][]float32{fork[prompt[0]:]}, [][]float32{want[0][prompt[0]:]})
				key := "last_logits"
				if on {
					key = "lora_last_logits"
				}
				refLast, _, err := f.Float64(key)
				if err != nil {
					t.Fatal(err)
				}
				V := m.Config.VocabSize
				var dl float64
				for b := range last {
					for v := range V {
						dl = math.Max(dl, math.Abs(float64(last[b][v])-refLast[b*V+v]))
					}
				}
				t.Logf("adapters=%v: decode vs graph max |Δ lp| %.2e (fork %.2e); last logits vs PyTorch %.2e", on, d, df, dl)
				if d > 1e-5 || df > 1e-5 || dl > 1e-4 {
					t.Errorf("adapters=%v: decode vs graph %.2e, fork %.2e (tol 1e-5); last logits vs PyTorch %.2e (tol 1e-4)", on, d, df, dl)
				}
			}
			// The adapter must matter on the decode path too.
			if d := maxDiff(byState[0], byState[1]); d < 1e-3 {
				t.Errorf("decode log-probs with adapters on and off differ by only %.2e", d)
			}
		})
	}
}

// TestEntropyAndBuckets: Forward's entropy equals the entropy of the decode
// path's logits at every position; sequence lengths are bucketed so a
// sweep of lengths builds few graphs, and the cache evicts beyond MaxGraphs.
func TestEntropyAndBuckets(t *testing.T) {
	const name = "qwen3-f32-tied"
	ref := readFixtureRef(t, name)
	m := openFixture(t, name, Options{Adapter: filepath.Join(fixtures, name, "adapter"), MaxGraphs: 2})
	s := ref.Tokens[0]
	out, err := m.Forward([][]int32{s}, true)
	if err != nil {
		t.Fatal(err)
	}
	d, err := m.NewKVCache(1, len(s), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	V := m.Config.VocabSize
	host := make([]float32, V)
	var worst float64
	for i := 1; i < len(s); i++ {
		if err := d.Reset(0); err != nil {
			t.Fatal(err)
		}
		buf, err := d.Prefill(0, s[:i])
		if err != nil {
			t.Fatal(err)
		}
		m.be.CopyOut(host, buf)
		var h float64
		for v := range V {
			lp := hostLogSoftmax(host, int32(v))
			h -= math.Exp(lp) * lp
		}
		worst = math.Max(worst, math.Abs(h-float64(out.Entropy[0][i])))
	}
	t.Logf("entropy: Forward vs decode logits max |Δ| %.2e", worst)
	if worst > 1e-5 || out.Entropy[0][0] != 0 {
		t.Errorf("entropy differs by %.2e (or position 0 is %v)", worst, out.Entropy[0][0])
	}
	long := append(append(append([]int32(nil), s...), s...), s...) // 48 tokens: buckets 16, 32, 48
	first, _ := m.LogProbs([][]int32{long[:5]}, true)
	built := m.graphs.built // bucket 16 exists already
	for n := 1; n <= len(long); n++ {
		if _, err := m.LogProbs([][]int32{long[:n]}, true); err != nil {
			t.Fatal(err)
		}
		if len(m.graphs.m) > 2 {
			t.Fatalf("%d graphs cached, MaxGraphs 2", len(m.graphs.m))
		}
	}
	if n := m.graphs.built - built; n != 2 {
		t.Errorf("%d graph builds for lengths 1..48, want 2 (buckets 32, 48)", n)
	}
	again, _ := m.LogProbs([][]int32{long[:5]}, true) // rebuilt after eviction
	if _, ok := m.graphs.m[[2]int{1, 16}]; !ok || m.graphs.built-built != 3 {
		t.Error("bucket 16 was not evicted and rebuilt")
	}
	if maxDiff(first, again) != 0 {
		t.Error("a rebuilt graph gives different log-probs")
	}
	for k := range m.graphs.m {
		if k[1]%16 != 0 {
			t.Errorf("graph T=%d is not a multiple of the bucket 16", k[1])
		}
	}
}

// TestGraphCacheMemoryBudget: beyond Options.GraphBytes the cache keeps
// only the graph in use, and evicted shapes rebuild to the same results.
func TestGraphCacheMemoryBudget(t *testing.T) {
	const name = "qwen2-f32"
	ref := readFixtureRef(t, name)
	m := openFixture(t, name, Options{GraphBytes: 1})
	s := ref.Tokens[0]
	long := append(append(append([]int32(nil), s...), s...), s...)
	first, err := m.LogProbs([][]int32{long[:5]}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{20, 40, 5} {
		if _, err := m.LogProbs([][]int32{long[:n]}, false); err != nil {
			t.Fatal(err)
		}
		if len(m.graphs.m) != 1 {
			t.Fatalf("%d graphs cached under a 1-byte budget, want only the one in use", len(m.graphs.m))
		}
	}
	again, _ := m.LogProbs([][]int32{long[:5]}, false)
	if maxDiff(first, again) != 0 {
		t.Error("a rebuilt graph gives different log-probs")
	}
	m2 := openFixture(t, name, Options{})
	for _, n := range []int{5, 20, 40} {
		if _, err := m2.LogProbs([][]int32{long[:n]}, false); err != nil {
			t.Fatal(err)
		}
	}
	if len(m2.graphs.m) != 3 {
		t.Errorf("default budget: %d graphs cached, want 3", len(m2.graphs.m))
	}
}
