package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/model/safetensors"
	"github.com/argrl/argrl/reward"
	"github.com/argrl/argrl/trainer"
	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/metrics"
)

// The CUDA backend end to end without a GPU: every recipe runs through
// the CUDA backend's host code (pool, views, launch shapes, the cuBLAS
// mapping inside the full graphs) on the CPU emulator of its kernels.

// tinyRecipeConfig is configs/<algo>-tiny.yaml for steps steps on backend,
// with the repository paths made relative to cmd/train and no validation
// (it does not enter the losses; `train eval` is tested on cuda-emu below).
func tinyRecipeConfig(t *testing.T, algo, run, backend string, steps int) config.Config {
	t.Helper()
	td := "../../trainer/testdata/sft"
	cfg, err := config.Load("../../configs/"+algo+"-tiny.yaml", []string{
		"algo=" + algo, "run.dir=" + run, "model.backend=" + backend,
		"model.path=" + td + "/tiny", "data.train=" + td + "/train.jsonl", "data.val=",
		"checkpoint.best_metric=loss", fmt.Sprintf("optim.max_steps=%d", steps)})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// vowelReward scores a response by the share of vowels in its text, so
// that the rollouts of a randomly initialized model get distinct rewards
// (the tiny configs' rm3 gives all of them the same -1, which leaves
// GRPO's advantages and gradients at zero): the comparison then covers
// the policy-gradient path too. It is a function of the text alone, so
// both backends score identical samples identically.
type vowelReward struct{}

func (vowelReward) Name() string { return "vowels" }

func (vowelReward) Score(_ context.Context, _ *data.Record, text string) (*reward.Result, error) {
	n := 0
	for _, c := range text {
		if strings.ContainsRune("aeiouAEIOU", c) {
			n++
		}
	}
	return &reward.Result{Reward: float64(n) / float64(len(text)+1), Gate: "vowels"}, nil
}

// runRecipe runs algo and returns its log (stderr of the command).
func runRecipe(t *testing.T, algo string, cfg config.Config) string {
	t.Helper()
	var log bytes.Buffer
	var err error
	switch algo {
	case "sft":
		_, err = trainer.SFT(context.Background(), cfg, trainer.SFTOptions{Log: &log})
	case "grpo":
		_, err = trainer.GRPO(context.Background(), cfg, trainer.RLOptions{Log: &log, Reward: vowelReward{}})
	case "ppo":
		_, err = trainer.PPO(context.Background(), cfg, trainer.RLOptions{Log: &log, Reward: vowelReward{}})
	}
	if err != nil {
		t.Fatalf("%s on %s: %v\n%s", algo, cfg.Model.Backend, err, log.String())
	}
	return log.String()
}

// trainSteps returns the "train" lines of RUN/metrics.jsonl in step order.
func trainSteps(t *testing.T, run string) []metrics.Metrics {
	t.Helper()
	recs, err := metrics.Read(filepath.Join(run, metrics.File))
	if err != nil {
		t.Fatal(err)
	}
	var out []metrics.Metrics
	for _, r := range recs {
		if r.Kind == "train" {
			out = append(out, r.Values)
		}
	}
	return out
}

// relDiff is |a−b| / max(|a|, |b|, floor).
func relDiff(a, b, floor float64) float64 {
	return math.Abs(a-b) / math.Max(math.Max(math.Abs(a), math.Abs(b)), floor)
}

// TestCUDAEmuMatchesCPU runs 3 steps of SFT, GRPO and PPO on the tiny
// configs with the cpu and the cuda-emu backends. The losses agree within
// 1e-4 relative at step 1 and 1e-3 after (float32 summation orders differ:
// cuBLAS-style GEMMs, tiled attention); so do the gradient norms and, for
// the RL recipes, the KL and entropy; the rollouts are the same samples
// (equal rewards and lengths). SFT trains every weight, and the final
// weights agree within 1e-4. The emulator's pool
// statistics are printed (-v) from the run's closing line.
func TestCUDAEmuMatchesCPU(t *testing.T) {
	for _, algo := range []string{"sft", "grpo", "ppo"} {
		t.Run(algo, func(t *testing.T) {
			t.Parallel()
			runs := map[string]string{}
			for _, be := range []string{"cpu", "cuda-emu"} {
				run := filepath.Join(t.TempDir(), be)
				t0 := time.Now()
				log := runRecipe(t, algo, tinyRecipeConfig(t, algo, run, be, 3))
				t.Logf("%s on %s: 3 steps in %.1f s", algo, be, time.Since(t0).Seconds())
				if be == "cuda-emu" {
					pool := ""
					for _, l := range strings.Split(log, "\n") {
						if strings.Contains(l, "cuda-emu memory pool: peak") {
							pool = l
						}
					}
					if pool == "" {
						t.Errorf("%s on cuda-emu: no pool statistics in the log:\n%s", algo, log)
					}
					t.Log(pool)
				}
				runs[be] = run
			}
			cpu, emu := trainSteps(t, runs["cpu"]), trainSteps(t, runs["cuda-emu"])
			if len(cpu) != 3 || len(emu) != 3 {
				t.Fatalf("train lines: cpu %d, cuda-emu %d; want 3", len(cpu), len(emu))
			}
			keys := []string{"loss", "grad_norm"}
			if algo != "sft" {
				keys = append(keys, "kl", "entropy", "reward_mean", "resp_len")
			}
			for i := range cpu {
				tol := 1e-3
				if i == 0 {
					tol = 1e-4
				}
				for _, k := range keys {
					c, okc := cpu[i][k]
					g, okg := emu[i][k]
					if !okc || !okg {
						t.Fatalf("step %d: no %s", i+1, k)
					}
					d := relDiff(c, g, 1e-6)
					t.Logf("step %d %-11s cpu %-12.7g cuda-emu %-12.7g rel diff %.2g", i+1, k, c, g, d)
					if d > tol {
						t.Errorf("step %d: %s cpu %.9g, cuda-emu %.9g: relative difference %.3g > %g", i+1, k, c, g, d, tol)
					}
				}
			}
			if algo == "grpo" && cpu[0]["grad_norm"] == 0 {
				t.Error("grpo: step 1 has no gradient: the comparison would not cover the policy gradient")
			}
			if algo == "sft" {
				ck := "checkpoints/step-000003/" + safetensors.SingleName
				worst := compareWeights(t, filepath.Join(runs["cpu"], ck), filepath.Join(runs["cuda-emu"], ck), 1e-4)
				t.Logf("sft: final weights: largest |cpu − cuda-emu| %.2g", worst)
			}
		})
	}
}

// compareWeights checks every tensor of two safetensors files: max|a−b| ≤
// tol. It returns the largest difference. (An absolute bound: the k_proj
// biases have a gradient that is zero in exact arithmetic, since softmax
// ignores a shift shared by all keys, so what AdamW does with their
// rounding noise differs between backends relative to their own tiny
// size, while staying far below the bound.)
func compareWeights(t *testing.T, pa, pb string, tol float64) float64 {
	t.Helper()
	fa, err := safetensors.Open(pa)
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Close()
	fb, err := safetensors.Open(pb)
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	if len(fa.Names()) == 0 || len(fa.Names()) != len(fb.Names()) {
		t.Fatalf("%s has %d tensors, %s %d", pa, len(fa.Names()), pb, len(fb.Names()))
	}
	worst := 0.0
	for _, name := range fa.Names() {
		a, _, err := fa.Float32(name)
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := fb.Float32(name)
		if err != nil {
			t.Fatalf("%s: %v", pb, err)
		}
		if len(a) != len(b) {
			t.Fatalf("%s: %d vs %d elements", name, len(a), len(b))
		}
		diff := 0.0
		for i := range a {
			diff = math.Max(diff, math.Abs(float64(a[i])-float64(b[i])))
		}
		worst = math.Max(worst, diff)
		if diff > tol {
			t.Errorf("weight %s: max |cpu − cuda-emu| = %.3g > %g", name, diff, tol)
		}
	}
	return worst
}
