// Command dist times data-parallel training (issue 19): the same global
// batch on 1 rank and on 2 ranks of bin/train-mpi under mpirun, and the
// share of a 2-rank step spent in the gradient all-reduce. Run from the
// repository root after `make build-mpi` (bench/dist/bench.sh does both):
//
//	go run ./bench/dist [-bin bin/train-mpi] [-steps 10] [-reps 2] [-cores N]
//
// Cases, each optim.batch_size 4 × optim.grad_accum 2 sequences or prompts
// per step, so each of 2 ranks runs one micro-batch per update:
//
//	sft-tiny   configs/sft-tiny.yaml: full fine-tuning of the 2-layer, hidden-64
//	           model (0.1M parameters: a 0.4 MB all-reduce per step)
//	sft-wide   the same corpus on a hidden-256, 4-layer, intermediate-704
//	           model from random weights (3.1M parameters: 12 MB per step)
//	grpo-tiny  configs/grpo-tiny.yaml with grad_accum 2: LoRA r 8 (66 KB per update)
//
// The 1-rank run uses every core (GOMAXPROCS = cores), each of the 2 ranks
// half of them, so both use the same cores. A third run is what each of
// the 2 ranks computes, alone: 1 rank on half the cores with half the
// batch (grad_accum 1), the time 2 ranks would take if they ran side by
// side without slowing each other down and without communicating. The runs
// alternate, reps times each, so that a load on the machine weighs on all
// alike. A step's time
// is the median of time_step_s over the steps after the first (graph
// building) of every repetition; the
// all-reduce share is the median of time_allreduce_s / time_step_s over
// the 2-rank steps, and the wait share (a rank waiting at the Check before
// the all-reduce for the other) of time_wait_s / time_step_s. Evaluation
// is off; the one checkpoint is written after the last step.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"

	"github.com/argrl/argrl/trainer/metrics"
)

type benchCase struct {
	name, algo, config string
	sets               []string
}

func main() {
	bin := flag.String("bin", "bin/train-mpi", "the MPI build of train (make build-mpi)")
	steps := flag.Int("steps", 10, "optimizer steps per run")
	reps := flag.Int("reps", 2, "runs of each case and rank count")
	cores := flag.Int("cores", runtime.NumCPU(), "cores shared by the ranks")
	flag.Parse()
	if err := run(*bin, *steps, *reps, *cores); err != nil {
		fmt.Fprintln(os.Stderr, "bench/dist:", err)
		os.Exit(1)
	}
}

func run(bin string, steps, reps, cores int) error {
	tmp, err := os.MkdirTemp("", "argrl-dist-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	wide, err := wideModel(tmp)
	if err != nil {
		return err
	}
	common := []string{"--set", "optim.max_steps=" + strconv.Itoa(steps), "--set", "eval_every=0", "--set", "data.val=",
		"--set", "checkpoint.every=0", "--set", "optim.batch_size=4", "--set", "optim.grad_accum=2"}
	cases := []benchCase{
		{"sft-tiny", "sft", "configs/sft-tiny.yaml", nil},
		{"sft-wide", "sft", "configs/sft-tiny.yaml", []string{"--set", "model.path=" + wide}},
		{"grpo-tiny", "grpo", "configs/grpo-tiny.yaml", []string{"--set", "ppo.mini_batch=0"}},
	}
	fmt.Printf("data parallel, the same global batch (8 per step), %d cores shared by the ranks; median of %d×%d steps\n\n", cores, reps, steps-1)
	fmt.Println("| case | 1 rank step (s) | 2 ranks step (s) | speed-up | one rank's half alone (s) | all-reduce share | wait share |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, c := range cases {
		half := c
		half.name, half.sets = c.name+"-half", append(append([]string(nil), c.sets...), "--set", "optim.grad_accum=1")
		var one, two, alone []metrics.Record
		for rep := range reps {
			r1, err := job(bin, tmp, c, common, 1, cores, rep)
			if err != nil {
				return err
			}
			r2, err := job(bin, tmp, c, common, 2, max(1, cores/2), rep)
			if err != nil {
				return err
			}
			rh, err := job(bin, tmp, half, common, 1, max(1, cores/2), rep)
			if err != nil {
				return err
			}
			one, two, alone = append(one, r1...), append(two, r2...), append(alone, rh...)
		}
		t1, t2 := median(one, "time_step_s", ""), median(two, "time_step_s", "")
		fmt.Printf("| %s | %.3f | %.3f | %.2f× | %.3f | %.1f%% | %.1f%% |\n", c.name, t1, t2, t1/t2, median(alone, "time_step_s", ""),
			100*median(two, "time_allreduce_s", "time_step_s"), 100*median(two, "time_wait_s", "time_step_s"))
	}
	return nil
}

// job runs c on np ranks of threads threads each and returns its train lines.
func job(bin, tmp string, c benchCase, common []string, np, threads, rep int) ([]metrics.Record, error) {
	runDir := filepath.Join(tmp, fmt.Sprintf("%s-%d-%d", c.name, np, rep))
	args := []string{"--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-x", "GOMAXPROCS=" + strconv.Itoa(threads),
		"-np", strconv.Itoa(np), bin, c.algo, "--config", c.config, "--set", "run.dir=" + runDir}
	args = append(append(args, common...), c.sets...)
	cmd := exec.Command("mpirun", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s on %d ranks: %v\n%s", c.name, np, err, out.String())
	}
	recs, err := metrics.Read(filepath.Join(runDir, metrics.File))
	if err != nil {
		return nil, err
	}
	var train []metrics.Record
	for _, r := range recs {
		if r.Kind == "train" && r.Step > 1 {
			train = append(train, r)
		}
	}
	if len(train) == 0 {
		return nil, fmt.Errorf("%s on %d ranks: no train lines after step 1", c.name, np)
	}
	return train, nil
}

// median is the median of key (divided by per, unless per is "") over recs.
func median(recs []metrics.Record, key, per string) float64 {
	var xs []float64
	for _, r := range recs {
		v := r.Values[key]
		if per != "" {
			v /= r.Values[per]
		}
		xs = append(xs, v)
	}
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

// wideModel writes the sft-wide model directory (config.json and the tiny
// model's tokenizer; the weights come from model.init: random).
func wideModel(tmp string) (string, error) {
	dir := filepath.Join(tmp, "wide")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src := "trainer/testdata/sft/tiny"
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return "", err
		}
	}
	cfg := `{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
 "hidden_size": 256, "intermediate_size": 704, "num_hidden_layers": 4, "num_attention_heads": 4,
 "num_key_value_heads": 2, "max_position_embeddings": 512, "max_window_layers": 4, "rms_norm_eps": 1e-06,
 "rope_theta": 1000000.0, "sliding_window": 512, "use_sliding_window": false, "tie_word_embeddings": true,
 "initializer_range": 0.02, "bos_token_id": 505, "eos_token_id": 507, "torch_dtype": "float32", "vocab_size": 512}`
	return dir, os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644)
}
