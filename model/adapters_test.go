package model

import (
	"maps"
	"math"
	"path/filepath"
	"slices"
	"testing"
)

// TestMixedAdapterStep: one KVCache.Step whose rows use different served
// adapters (two loaded adapters of different ranks and targets, the base
// model, and prefill chunks next to decode rows) gives every row exactly
// the logits it gets alone; a loaded adapter gives exactly what the
// model's own slots give with the same adapter opened; the adapters do
// change the logits.
func TestMixedAdapterStep(t *testing.T) {
	const name = "qwen2-f32"
	fixtureAdapter := filepath.Join(fixtures, name, "adapter") // r = 4, every target
	own := openFixture(t, name, withAdapter(name))
	m := openFixture(t, name, Options{})
	c := m.Config
	second, err := NewAdapter(c, 8, 16, 0, []string{"q_proj", "v_proj", "down_proj"})
	if err != nil {
		t.Fatal(err)
	}
	k := 0
	for _, p := range slices.Sorted(maps.Keys(second.Modules)) {
		for _, x := range []*Tensor{second.Modules[p].A, second.Modules[p].B} {
			for i := range x.Data {
				k++
				x.Data[i] = 0.05 * float32(math.Sin(float64(k)))
			}
		}
	}
	secondDir := filepath.Join(t.TempDir(), "second")
	if err := ExportPEFT(secondDir, second, c); err != nil {
		t.Fatal(err)
	}
	a1, err := m.LoadAdapter(fixtureAdapter)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := m.LoadAdapter(secondDir)
	if err != nil {
		t.Fatal(err)
	}
	if a1 != 1 || a2 != 2 || m.LoadedAdapters() != 2 {
		t.Fatalf("adapter numbers %d, %d (%d loaded)", a1, a2, m.LoadedAdapters())
	}
	V := c.VocabSize
	prompts := [][]int32{{3, 17, 29, 4, 11}, {8, 2, 40, 7}, {19, 5}, {23, 31, 6, 9, 14, 1}}
	adapters := []int{a1, NoAdapter, a2, a1}
	// logits of each prompt run alone (prefill, then two decode steps).
	run := func(mm *Model, rows func(step int) []KVRow) [][]float32 {
		d, err := mm.NewPagedKVCache(KVOptions{Seqs: len(prompts), MaxLen: 32})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		var out [][]float32
		for step := range 3 {
			rs := rows(step)
			buf, err := d.Step(rs)
			if err != nil {
				t.Fatal(err)
			}
			host := make([]float32, len(rs)*V)
			mm.be.CopyOut(host, buf)
			if err := mm.be.Sync(); err != nil {
				t.Fatal(err)
			}
			for i := range rs {
				out = append(out, host[i*V:(i+1)*V])
			}
		}
		return out
	}
	feed := func(b, step int) []int32 {
		if step == 0 {
			return prompts[b]
		}
		return []int32{int32(10*b + step)}
	}
	alone := make([][][]float32, len(prompts)) // [prompt][step]
	for b := range prompts {
		alone[b] = run(m, func(step int) []KVRow { return []KVRow{{Seq: b, IDs: feed(b, step), Adapter: adapters[b]}} })
	}
	// Mixed: prompt 3 starts a step late, so its prefill chunk runs next to
	// the others' decode rows.
	var order [][2]int // (prompt, step) of each logits row
	mixed := run(m, func(step int) []KVRow {
		var rs []KVRow
		for b := range prompts {
			s := step
			if b == 3 {
				s = step - 1
			}
			if s < 0 {
				continue
			}
			rs = append(rs, KVRow{Seq: b, IDs: feed(b, s), Adapter: adapters[b]})
			order = append(order, [2]int{b, s})
		}
		return rs
	})
	for i, o := range order {
		b, s := o[0], o[1]
		if s >= len(alone[b]) {
			continue
		}
		if !slices.Equal(mixed[i], alone[b][s]) {
			t.Errorf("prompt %d (adapter %d), step %d: the mixed batch's logits differ from the request's alone", b, adapters[b], s)
		}
	}
	// A loaded adapter is the model's own slots with that adapter.
	ownLogits := run(own, func(step int) []KVRow { return []KVRow{{Seq: 0, IDs: feed(0, step)}} })
	for s := range ownLogits {
		if !slices.Equal(ownLogits[s], alone[0][s]) {
			t.Errorf("step %d: loaded adapter %d differs from the same adapter in the model's own slots", s, a1)
		}
	}
	base := run(m, func(step int) []KVRow { return []KVRow{{Seq: 0, IDs: feed(0, step), Adapter: NoAdapter}} })
	if slices.Equal(base[0], alone[0][0]) {
		t.Errorf("adapter %d leaves the logits unchanged: the test would not see a wrong adapter", a1)
	}
	base2 := run(m, func(step int) []KVRow { return []KVRow{{Seq: 2, IDs: feed(2, step), Adapter: OwnAdapter}} })
	if slices.Equal(base2[0], alone[2][0]) {
		t.Errorf("adapter %d leaves the logits unchanged", a2)
	}
	// Bad choices are refused before any work.
	d, err := m.NewPagedKVCache(KVOptions{Seqs: 1, MaxLen: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, a := range []int{3, -2} {
		if _, err := d.Step([]KVRow{{Seq: 0, IDs: []int32{1}, Adapter: a}}); err == nil {
			t.Errorf("adapter %d accepted", a)
		} else if d.Len(0) != 0 {
			t.Errorf("adapter %d: refused after caching tokens", a)
		}
	}
	if _, err := m.LoadAdapter(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing adapter directory loaded")
	}
}
