package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
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
		"model.compute=f32", // auto would make the CPU (AVX512-BF16) and the emulated tensor-core modes run bf16
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
// weights agree within 1e-4. SFT runs once more on cuda-emu-bf16 (bf16
// activations between the passes): its first loss is the CPU's within
// 1e-4, gradient norms within 2e-2, later losses within 1e-2. The pool
// statistics of each emulated run are printed (-v) from its closing line.
func TestCUDAEmuMatchesCPU(t *testing.T) {
	for _, c := range []struct {
		algo, backend      string
		tol1, tol, gradTol float64 // step-1 and later losses, gradient norms (relative)
	}{
		{"sft", "cuda-emu", 1e-4, 1e-3, 1e-3},
		{"grpo", "cuda-emu", 1e-4, 1e-3, 1e-3},
		{"ppo", "cuda-emu", 1e-4, 1e-3, 1e-3},
		// bf16 activations: the forward is unchanged (step 1's loss), the
		// backward reads activations rounded to bf16
		{"sft", "cuda-emu-bf16", 1e-4, 1e-2, 2e-2},
	} {
		algo, emuName := c.algo, c.backend
		t.Run(algo+"/"+emuName, func(t *testing.T) {
			t.Parallel()
			runs := map[string]string{}
			for _, be := range []string{"cpu", emuName} {
				run := filepath.Join(t.TempDir(), be)
				t0 := time.Now()
				log := runRecipe(t, algo, tinyRecipeConfig(t, algo, run, be, 3))
				t.Logf("%s on %s: 3 steps in %.1f s", algo, be, time.Since(t0).Seconds())
				if be != "cpu" {
					pool := ""
					for _, l := range strings.Split(log, "\n") {
						if strings.Contains(l, be+" memory pool: peak") {
							pool = l
						}
					}
					if pool == "" {
						t.Errorf("%s on %s: no pool statistics in the log:\n%s", algo, be, log)
					}
					t.Log(pool)
				}
				runs[be] = run
			}
			cpu, emu := trainSteps(t, runs["cpu"]), trainSteps(t, runs[emuName])
			if len(cpu) != 3 || len(emu) != 3 {
				t.Fatalf("train lines: cpu %d, %s %d; want 3", len(cpu), emuName, len(emu))
			}
			keys := []string{"loss", "grad_norm"}
			if algo != "sft" {
				keys = append(keys, "kl", "entropy", "reward_mean", "resp_len")
			}
			for i := range cpu {
				for _, k := range keys {
					tol := c.tol
					switch {
					case k == "grad_norm":
						tol = c.gradTol
					case i == 0:
						tol = c.tol1
					}
					a, okc := cpu[i][k]
					b, okg := emu[i][k]
					if !okc || !okg {
						t.Fatalf("step %d: no %s", i+1, k)
					}
					d := relDiff(a, b, 1e-6)
					t.Logf("step %d %-11s cpu %-12.7g %s %-12.7g rel diff %.2g", i+1, k, a, emuName, b, d)
					if d > tol {
						t.Errorf("step %d: %s cpu %.9g, %s %.9g: relative difference %.3g > %g", i+1, k, a, emuName, b, d, tol)
					}
				}
			}
			if algo == "grpo" && cpu[0]["grad_norm"] == 0 {
				t.Error("grpo: step 1 has no gradient: the comparison would not cover the policy gradient")
			}
			if algo == "sft" && emuName == "cuda-emu" {
				ck := "checkpoints/step-000003/" + safetensors.SingleName
				worst := compareWeights(t, filepath.Join(runs["cpu"], ck), filepath.Join(runs[emuName], ck), 1e-4)
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

// TestCUDAEmuCommands runs `train generate`, `train score` and
// model-driven `train eval` with --backend cuda-emu next to the CPU
// backend: generate samples the same tokens (bf16 sharded checkpoint with
// its LoRA adapter) with log-probs within 1e-4, score gives the same
// log-probs within 1e-4, and eval prints the same report.
func TestCUDAEmuCommands(t *testing.T) {
	tmp := t.TempDir()
	prompts, byID := writePromptIDs(t, tmp, 3, 3)
	dir := filepath.Join(scoreFixtures, "qwen3-bf16-sharded")
	ad := []string{"--adapter", filepath.Join(dir, "adapter")}
	gen := map[string][]genLine{}
	for _, be := range []string{"cpu", "cuda-emu"} {
		out, err := runGenerate(t, append([]string{"--model", dir, "--prompt-ids", prompts, "--n", "2", "--batch", "6",
			"--max-len", "64", "--temperature", "0.9", "--top-p", "0.95", "--max-new-tokens", "8", "--seed", "7",
			"--backend", be, "--compute", "f32"}, ad...)...)
		if err != nil {
			t.Fatalf("generate --backend %s: %v", be, err)
		}
		gen[be] = parseGen(t, out)
	}
	c, g := gen["cpu"], gen["cuda-emu"]
	if len(c) != 6 || len(g) != len(c) {
		t.Fatalf("generate: %d lines on cpu, %d on cuda-emu; want 6", len(c), len(g))
	}
	var seqs strings.Builder
	worst := 0.0
	for i := range c {
		if fmt.Sprint(c[i].TokenIDs) != fmt.Sprint(g[i].TokenIDs) {
			t.Fatalf("generate line %d: cpu sampled %v, cuda-emu %v", i, c[i].TokenIDs, g[i].TokenIDs)
		}
		for j := range c[i].Logprobs {
			worst = math.Max(worst, math.Abs(c[i].Logprobs[j]-g[i].Logprobs[j]))
		}
		js, _ := json.Marshal(map[string]any{"token_ids": append(append([]int32(nil), byID[c[i].ID]...), c[i].TokenIDs...)})
		seqs.Write(js)
		seqs.WriteByte('\n')
	}
	t.Logf("generate: same %d samples; max |Δ log-prob| %.2g", len(c), worst)
	if worst > 1e-4 {
		t.Errorf("generate: log-probs differ by %.3g > 1e-4", worst)
	}

	path := filepath.Join(tmp, "seqs.jsonl")
	if err := os.WriteFile(path, []byte(seqs.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	scored := map[string][]string{}
	for _, be := range []string{"cpu", "cuda-emu"} {
		out, err := runScore(t, append([]string{"--model", dir, "--input", path, "--backend", be, "--compute", "f32"}, ad...)...)
		if err != nil {
			t.Fatalf("score --backend %s: %v", be, err)
		}
		scored[be] = strings.Split(strings.TrimSpace(out), "\n")
	}
	worst, n := 0.0, 0
	for i, l := range scored["cpu"] {
		var a, b struct {
			Logprobs []*float64 `json:"logprobs"`
		}
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(scored["cuda-emu"][i]), &b); err != nil {
			t.Fatal(err)
		}
		for j := range a.Logprobs {
			if (a.Logprobs[j] == nil) != (b.Logprobs[j] == nil) {
				t.Fatalf("score line %d token %d: null on one backend only", i, j)
			}
			if a.Logprobs[j] != nil {
				worst = math.Max(worst, math.Abs(*a.Logprobs[j]-*b.Logprobs[j]))
				n++
			}
		}
	}
	t.Logf("score: %d log-probs, max |cpu − cuda-emu| %.2g", n, worst)
	if n == 0 || worst > 1e-4 {
		t.Errorf("score: %d log-probs differ by up to %.3g (want ≤ 1e-4)", n, worst)
	}

	// eval: greedy responses of the demo's base model on the SFT corpus
	reports := map[string]string{}
	for _, be := range []string{"cpu", "cuda-emu"} {
		cmd := newEvalCmd()
		var so, se bytes.Buffer
		cmd.SetOut(&so)
		cmd.SetErr(&se)
		out := filepath.Join(tmp, be+".json")
		cmd.SetArgs([]string{"--model", "../../configs/demo/base-model", "--data", "../../trainer/testdata/sft/val.jsonl",
			"--max-new-tokens", "12", "--max-len", "512", "--batch", "8", "--backend", be, "--compute", "f32", "--out", out})
		if err := cmd.Execute(); err != nil {
			t.Fatalf("eval --backend %s: %v\n%s", be, err, se.String())
		}
		js, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		reports[be] = so.String() + string(js)
	}
	if reports["cpu"] != reports["cuda-emu"] || reports["cpu"] == "" {
		t.Errorf("eval reports differ:\ncpu:\n%s\ncuda-emu:\n%s", reports["cpu"], reports["cuda-emu"])
	}
}
