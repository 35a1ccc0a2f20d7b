package rl

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/ranks"
)

// TestReferenceLogProbsByTokens: the reference's log-probs with its
// micro-batches cut by a token budget (optim.micro_tokens, as the trainer
// cuts them) are the bits of the same sequences cut by rows, on the CPU,
// packed and one sequence per row, for every form of reference (the base
// with LoRA off, a snapshot swapped in, a second model); and a cut that
// leaves a sequence out or repeats one is an error, not a short answer.
func TestReferenceLogProbsByTokens(t *testing.T) {
	r := rand.New(rand.NewPCG(34, 2))
	var seqs [][]int32
	lens := []int{100, 3, 70, 128, 1, 40, 65, 2, 90, 17}
	for _, n := range lens {
		s := make([]int32, n)
		for i := range s {
			s[i] = int32(1 + r.IntN(300))
		}
		seqs = append(seqs, s)
	}
	be := kernels.NewCPU()
	for _, pack := range []bool{true, false} {
		m, err := model.Open(rlFixture, be, model.Options{Adapter: rlFixtureAdapter, Pack: pack, Compute: "f32"})
		if err != nil {
			t.Fatal(err)
		}
		byRows := ranks.One().Cut(len(seqs), 4, lens)
		team := ranks.One()
		team.UseTokens(200, m.GraphTokens)
		byTokens := team.Cut(len(seqs), 4, lens)
		if len(byTokens) < 3 || slices.EqualFunc(byTokens, byRows, slices.Equal) {
			t.Fatalf("pack %v: the token cut %v does not differ from the row cut %v", pack, byTokens, byRows)
		}
		for _, form := range []struct {
			name string
			cfg  config.Config
		}{
			{"base", config.Config{}},
			{"snapshot", config.Config{Ref: config.RefConfig{UpdateEvery: 1}}},
			{"model", config.Config{Ref: config.RefConfig{Path: rlFixture}, Data: config.DataConfig{Packing: pack}}},
		} {
			ref, err := NewReference(form.cfg, m, be, false)
			if err != nil {
				t.Fatal(err)
			}
			if ref.Kind() != form.name {
				t.Fatalf("reference kind %s, want %s", ref.Kind(), form.name)
			}
			want, err := ref.LogProbs(seqs, byRows)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ref.LogProbs(seqs, byTokens)
			if err != nil {
				t.Fatal(err)
			}
			for i := range seqs {
				if len(got[i]) != len(seqs[i]) {
					t.Fatalf("%s pack %v: sequence %d: %d log-probs for %d tokens", form.name, pack, i, len(got[i]), len(seqs[i]))
				}
				for j := range got[i] {
					if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
						t.Fatalf("%s pack %v: sequence %d token %d: %v cut by tokens, %v by rows", form.name, pack, i, j, got[i][j], want[i][j])
					}
				}
			}
			if _, err := ref.LogProbs(seqs, byTokens[1:]); err == nil {
				t.Errorf("%s: a cut without the first micro-batch gave no error", form.name)
			}
			if _, err := ref.LogProbs(seqs, append(byTokens, []int{0})); err == nil {
				t.Errorf("%s: a cut repeating sequence 0 gave no error", form.name)
			}
			ref.Close()
		}
		m.Close()
	}
}
