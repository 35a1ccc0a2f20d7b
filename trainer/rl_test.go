package trainer

import (
	"bytes"
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/reward"
	"github.com/argrl/argrl/rollout"
	"github.com/argrl/argrl/trainer/ckpt"
	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/metrics"
	"github.com/argrl/argrl/trainer/rl"
)

func rolloutEngine(s *Setup) (*rollout.Engine, error) {
	return rollout.New(s.Model, rollout.Options{Batch: 8, MaxLen: s.MaxLen, Tokenizer: s.Tokenizer})
}

// letterReward is a synthetic task a random tiny model can learn quickly:
// the reward is the fraction of the response's bytes that are one of the
// letters in want (0 for an empty response). Its "argument value" spans
// are the runs of wanted letters, so β weighting has something to act on.
// Its terms (adv.per_part) split the reward by the first half of want and
// the rest: the fraction of bytes from each.
type letterReward struct{ want string }

func (l letterReward) Name() string { return "letters" }

func (l letterReward) Score(_ context.Context, _ *data.Record, text string) (*reward.Result, error) {
	res := &reward.Result{Parts: map[string]float64{}}
	n := 0
	start := -1
	for i := 0; i <= len(text); i++ {
		in := i < len(text) && strings.IndexByte(l.want, text[i]) >= 0
		if in {
			n++
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			res.Spans = append(res.Spans, [2]int{start, i})
			start = -1
		}
	}
	res.Terms = map[string]float64{"first": 0, "second": 0}
	if len(text) > 0 {
		res.Reward = float64(n) / float64(len(text))
		half := l.want[:len(l.want)/2]
		for i := 0; i < len(text); i++ {
			if strings.IndexByte(half, text[i]) >= 0 {
				res.Terms["first"]++
			} else if strings.IndexByte(l.want, text[i]) >= 0 {
				res.Terms["second"]++
			}
		}
		res.Terms["first"] /= float64(len(text))
		res.Terms["second"] /= float64(len(text))
	}
	res.Parts["letters"] = float64(n)
	return res, nil
}

// rlTinyConfig: the randomly initialized tiny model of testdata/sft (C=64,
// L=2, V=512) with LoRA r=8, prompts from the SFT test corpus, 2 prompts ×
// G=4 rollouts of ≤ 8 tokens per step, checkpoints every 2 steps.
func rlTinyConfig(dir, algo string) config.Config {
	c := config.Default()
	c.Algo = algo
	c.Run.Dir, c.Run.Seed = dir, 11
	c.Model.Path, c.Model.Init, c.Model.System, c.Model.MaxLen = "testdata/sft/tiny", "random", "You call tools.", 512
	c.Data.Train, c.Data.Val = "testdata/sft/train.jsonl", ""
	c.LoRA.R, c.LoRA.Alpha = 8, 16
	c.Optim.LR, c.Optim.BatchSize, c.Optim.GradAccum, c.Optim.MaxSteps = 2e-2, 2, 1, 6
	c.Optim.WarmupRatio, c.Optim.Schedule = 0, "constant"
	c.Rollout.G, c.Rollout.MaxNewTokens, c.Rollout.Temperature, c.Rollout.TopP = 4, 8, 1, 1
	c.KL.Coef = 0.01
	c.PPO.Epochs, c.PPO.MiniBatch = 2, 4
	c.Checkpoint.Every, c.Checkpoint.KeepLast = 2, 0
	c.EvalEvery = 0
	return c
}

func runRL(t *testing.T, cfg config.Config, o RLOptions) *RLResult {
	t.Helper()
	var log bytes.Buffer
	if o.Log == nil {
		o.Log = &log
	}
	if o.Reward == nil {
		o.Reward = letterReward{want: "aeiou"}
	}
	run := GRPO
	if cfg.Algo == "ppo" {
		run = PPO
	}
	res, err := run(context.Background(), cfg, o)
	if err != nil {
		t.Fatalf("%s: %v\n%s", cfg.Algo, err, log.String())
	}
	return res
}

func trainMetrics(t testing.TB, dir string) []metrics.Metrics {
	t.Helper()
	recs, err := metrics.Read(filepath.Join(dir, metrics.File))
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

// On-policy: at the first mini-batch of every step the training forward
// reproduces the rollout's log-probs bit for bit on the CPU backend (the
// same kernels in the same order: docs/design.md), so ρ = 1 exactly on
// every token; with fresh LoRA (B = 0) the policy equals the reference at
// step 1, so the KL is 0 there.
func TestGRPOOnPolicyRatio(t *testing.T) {
	for _, algo := range []string{"grpo", "ppo"} {
		t.Run(algo, func(t *testing.T) {
			cfg := rlTinyConfig(t.TempDir(), algo)
			cfg.Optim.MaxSteps = 3
			runRL(t, cfg, RLOptions{})
			ms := trainMetrics(t, cfg.Run.Dir)
			if len(ms) != 3 {
				t.Fatalf("%d train lines", len(ms))
			}
			for i, m := range ms {
				if d, ok := m["ratio_dev_first"]; !ok || d != 0 {
					t.Errorf("step %d: max |ρ−1| at the first mini-batch = %g, want exactly 0", i+1, d)
				}
				for _, k := range []string{"reward_mean", "reward_std", "reward_min", "reward_max", "reward_letters", "kl", "entropy",
					"clip_frac", "grad_norm", "lr", "resp_len", "rollout_tokens_per_s", "train_tokens_per_s", "ref_tokens_per_s"} {
					if _, ok := m[k]; !ok {
						t.Errorf("step %d: %s not logged", i+1, k)
					}
				}
				if algo == "grpo" {
					if _, ok := m["zero_std_frac"]; !ok {
						t.Errorf("zero_std_frac not logged")
					}
				} else if _, ok := m["vf_loss"]; !ok {
					t.Errorf("vf_loss not logged")
				}
			}
			if ms[0]["kl_first"] != 0 || !(ms[0]["kl"] > 0) {
				t.Errorf("step 1: KL %g at the first mini-batch, want 0 (B = 0: policy = reference); %g over the step's %g updates, want > 0",
					ms[0]["kl_first"], ms[0]["kl"], ms[0]["updates"])
			}
			if !(ms[2]["kl_first"] > 0) || math.IsNaN(ms[2]["kl_first"]) {
				t.Errorf("step 3: KL %g, want > 0 after two steps", ms[2]["kl_first"])
			}
			t.Logf("%s: max|ρ−1| %g %g %g; reward %v %v %v; kl %g %g %g", algo, ms[0]["ratio_dev_first"], ms[1]["ratio_dev_first"], ms[2]["ratio_dev_first"],
				ms[0]["reward_mean"], ms[1]["reward_mean"], ms[2]["reward_mean"], ms[0]["kl"], ms[1]["kl"], ms[2]["kl"])
		})
	}
}

// isTiming says whether a metric is a wall-clock measurement (it differs
// between any two runs).
func isTiming(k string) bool { return strings.HasPrefix(k, "time_") || strings.HasSuffix(k, "_per_s") }

// sameRun compares two finished runs: the final checkpoint's files byte
// for byte and every non-timing metric bit for bit.
func sameRun(t *testing.T, a, b string, final int, ppo bool) {
	t.Helper()
	ck := filepath.Join(ckpt.CheckpointsDir, ckpt.StepName(final))
	files := []string{"adapter_model.safetensors", "adapter_config.json", ckpt.OptimizerFile, ckpt.StateFile}
	if ppo {
		files = append(files, ckpt.ValueHeadFile)
	}
	for _, f := range files {
		if !filesEqual(t, filepath.Join(a, ck, f), filepath.Join(b, ck, f)) {
			t.Errorf("%s differs between the straight and the resumed run", filepath.Join(ck, f))
		}
	}
	ra, err := metrics.Read(filepath.Join(a, metrics.File))
	if err != nil {
		t.Fatal(err)
	}
	rb, err := metrics.Read(filepath.Join(b, metrics.File))
	if err != nil {
		t.Fatal(err)
	}
	if len(ra) != len(rb) {
		t.Fatalf("metrics: %d lines straight, %d resumed", len(ra), len(rb))
	}
	for i := range ra {
		if ra[i].Step != rb[i].Step || ra[i].Kind != rb[i].Kind || len(ra[i].Values) != len(rb[i].Values) {
			t.Fatalf("metrics line %d: %+v vs %+v", i+1, ra[i], rb[i])
		}
		for k, v := range ra[i].Values {
			w, ok := rb[i].Values[k]
			if !isTiming(k) && (!ok || math.Float64bits(v) != math.Float64bits(w)) && !(math.IsNaN(v) && math.IsNaN(w)) {
				t.Errorf("metrics step %d %s: %v straight, %v resumed", ra[i].Step, k, v, w)
			}
		}
	}
}

// Straight 6 steps = 3 steps (checkpoint at 2, stop after 3 without a
// checkpoint: a kill) + --resume, for GRPO and PPO: byte-identical
// adapters, optimizer, value head, state, and identical metrics. The
// lagged reference (ref.update_every 2) is part of the state.
func TestRLResumeBitIdentical(t *testing.T) {
	for _, algo := range []string{"grpo", "ppo"} {
		t.Run(algo, func(t *testing.T) {
			a, b := t.TempDir(), t.TempDir()
			ca, cb := rlTinyConfig(a, algo), rlTinyConfig(b, algo)
			ca.Ref.UpdateEvery, cb.Ref.UpdateEvery = 2, 2
			ra := runRL(t, ca, RLOptions{})
			runRL(t, cb, RLOptions{StopAfter: 3})
			rb := runRL(t, cb, RLOptions{Resume: true})
			if ra.Steps != 6 || rb.Steps != 6 {
				t.Fatalf("steps %d, %d", ra.Steps, rb.Steps)
			}
			sameRun(t, a, b, 6, algo == "ppo")
			// The runs did train: the adapter moved away from B = 0.
			w := readTensors(t, filepath.Join(a, ckpt.CheckpointsDir, ckpt.StepName(6), "adapter_model.safetensors"))
			moved := false
			for n, v := range w {
				if strings.Contains(n, "lora_B") {
					for _, x := range v {
						moved = moved || x != 0
					}
				}
			}
			if !moved {
				t.Fatal("LoRA B is still zero after 6 steps")
			}
		})
	}
}

// The helper process of TestRLSurvivesSIGKILL: trains RL_KILL_HELPER_ALGO
// in the run directory RL_KILL_HELPER_RUN (resuming when it holds a
// checkpoint) until the test kills it.
func TestRLKillHelper(t *testing.T) {
	dir := os.Getenv("RL_KILL_HELPER_RUN")
	if dir == "" {
		t.Skip("helper process for TestRLSurvivesSIGKILL")
	}
	cfg := rlTinyConfig(dir, os.Getenv("RL_KILL_HELPER_ALGO"))
	cfg.Checkpoint.Every = 1
	latest, _ := os.ReadFile(filepath.Join(dir, ckpt.CheckpointsDir, ckpt.LatestFile))
	runRL(t, cfg, RLOptions{Resume: len(latest) > 0})
}

// A GRPO or PPO run killed with SIGKILL at random moments (mid-step or
// mid-checkpoint) and resumed ends exactly where an uninterrupted run does.
func TestRLSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, algo := range []string{"grpo", "ppo"} {
		t.Run(algo, func(t *testing.T) {
			straight := t.TempDir()
			cs := rlTinyConfig(straight, algo)
			cs.Checkpoint.Every = 1
			runRL(t, cs, RLOptions{})

			dir := t.TempDir()
			killed := 0
			for attempt := 0; attempt < 3; attempt++ {
				cmd := exec.Command(os.Args[0], "-test.run=^TestRLKillHelper$", "-test.count=1")
				cmd.Env = append(os.Environ(), "RL_KILL_HELPER_RUN="+dir, "RL_KILL_HELPER_ALGO="+algo)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				// Wait for a new checkpoint, then kill a moment later (the
				// next step is running, or its checkpoint is being written).
				// (A helper that finishes the run first ends the wait.)
				exited := make(chan error, 1)
				go func() { exited <- cmd.Wait() }()
				before, _ := os.ReadFile(filepath.Join(dir, ckpt.CheckpointsDir, ckpt.LatestFile))
				var err error
				done := false
				deadline := time.Now().Add(60 * time.Second)
				for !done && time.Now().Before(deadline) {
					now, _ := os.ReadFile(filepath.Join(dir, ckpt.CheckpointsDir, ckpt.LatestFile))
					if len(now) > 0 && !bytes.Equal(now, before) {
						break
					}
					select {
					case err = <-exited:
						done = true
					case <-time.After(20 * time.Millisecond):
					}
				}
				if !done {
					time.Sleep(time.Duration(100+150*attempt) * time.Millisecond)
					cmd.Process.Signal(syscall.SIGKILL)
					err = <-exited
				}
				if ee, ok := err.(*exec.ExitError); ok && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL {
					killed++
				} else if err != nil {
					t.Fatalf("helper: %v\n%s", err, out.String())
				}
				latest, _ := os.ReadFile(filepath.Join(dir, ckpt.CheckpointsDir, ckpt.LatestFile))
				t.Logf("attempt %d: killed=%v, latest %s", attempt, err != nil, strings.TrimSpace(string(latest)))
			}
			if killed == 0 {
				t.Fatal("the helper was never killed mid-run")
			}
			cfg := rlTinyConfig(dir, algo)
			cfg.Checkpoint.Every = 1
			if latest, _ := os.ReadFile(filepath.Join(dir, ckpt.CheckpointsDir, ckpt.LatestFile)); strings.TrimSpace(string(latest)) != ckpt.StepName(6) {
				runRL(t, cfg, RLOptions{Resume: true})
			}
			sameRun(t, straight, dir, 6, algo == "ppo")
		})
	}
}

// Learning: on the synthetic letters task (reward = share of the
// response's bytes that are vowels; the random tiny model starts near the
// vocabulary's base rate), the mean reward of the last 10 steps exceeds
// that of the first 10 by at least longMargin, for GRPO with each
// adv.estimator (grpo, rloo, reinforce++), with adv.per_part, with DAPO's
// dynamic sampling and overlong penalty, with GSPO's sequence ratio, and
// for PPO, with fixed seeds. Minutes on CPU: run by `make test-long`
// (ARGRL_LONG=1).
const longMargin = 0.2

func TestLongRLLearnsLetters(t *testing.T) {
	if os.Getenv("ARGRL_LONG") == "" || testing.Short() {
		t.Skip("long learning test: ARGRL_LONG=1 (make test-long)")
	}
	for _, c := range []struct {
		name, algo string
		set        func(*config.Config)
	}{
		{"grpo", "grpo", nil},
		{"grpo-rloo", "grpo", func(c *config.Config) { c.Adv.Estimator = "rloo" }},
		{"grpo-reinforce++", "grpo", func(c *config.Config) { c.Adv.Estimator = "reinforce++" }},
		{"grpo-per_part", "grpo", func(c *config.Config) { c.Adv.PerPart = true }},
		{"grpo-dapo", "grpo", func(c *config.Config) {
			c.DynamicSampling.Enabled, c.Overlong.Mode, c.Overlong.Buffer, c.Clip.EpsHigh = true, "penalty", 4, 0.28
		}},
		{"grpo-gspo", "grpo", func(c *config.Config) {
			c.IsLevel, c.LossAgg, c.Clip.EpsLow, c.Clip.EpsHigh = "sequence", "seq-mean-token-mean", 3e-4, 4e-4
		}},
		{"ppo", "ppo", nil},
	} {
		algo := c.algo
		t.Run(c.name, func(t *testing.T) {
			cfg := rlLearnConfig(t, algo)
			if c.set != nil {
				c.set(&cfg)
			}
			t0 := time.Now()
			res := runRL(t, cfg, RLOptions{})
			r := res.Rewards
			if len(r) != cfg.Optim.MaxSteps {
				t.Fatalf("%d steps logged", len(r))
			}
			first, last := mean(r[:10]), mean(r[len(r)-10:])
			t.Logf("%s: mean reward first 10 steps %.3f, last 10 %.3f (%d steps, %s)", c.name, first, last, len(r), time.Since(t0).Round(time.Second))
			if !(last >= first+longMargin) {
				t.Errorf("%s did not learn: %.3f → %.3f (want +%.2f); rewards %v", c.name, first, last, longMargin, r)
			}
		})
	}
}

// rlLearnConfig: the tiny model with weights ~ N(0, 0.2²) instead of
// N(0, 0.02²) (at 0.02 its logits are nearly uniform and LoRA barely moves
// them), 40 steps of 4 prompts (GRPO: × 8 rollouts; PPO: 32 prompts × 1)
// of ≤ 8 new tokens.
func rlLearnConfig(t *testing.T, algo string) config.Config {
	dir := t.TempDir()
	raw, err := os.ReadFile("testdata/sft/tiny/config.json")
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.Replace(raw, []byte(`"initializer_range": 0.02`), []byte(`"initializer_range": 0.2`), 1)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	c := rlTinyConfig(t.TempDir(), algo)
	c.Model.Path, c.Model.Tokenizer = dir, "testdata/sft/tiny"
	c.Optim.MaxSteps, c.Optim.BatchSize, c.Optim.LR = 40, 4, 2e-2
	c.Rollout.G = 8
	c.PPO.Epochs, c.PPO.MiniBatch = 1, 0
	c.Checkpoint.Every = 0
	if algo == "ppo" {
		c.Optim.BatchSize, c.PPO.Gamma, c.PPO.Lambda = 32, 1, 0.95
	}
	return c
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// R2IF's CER student: the policy's base (LoRA off) or another checkpoint
// with its own tokenizer and template; K continuations after the
// reasoning, deterministic per (record, reasoning).
func TestR2IFStudent(t *testing.T) {
	cfg := rlTinyConfig(t.TempDir(), "grpo")
	cfg.Format, cfg.Reward.Name = "reason_tool", "r2if"
	cfg.Rollout.MaxNewTokens, cfg.Model.MaxLen = 6, 1024 // the 320-token BPE writes ~600-token prompts
	s, err := NewSetup(cfg, SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	eng, err := rolloutEngine(s)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	rec := s.Train.Examples[0].Rec
	policy := rl.Policy{Model: s.Model, Engine: eng, Tokenizer: s.Tokenizer, Template: s.Template, Format: s.Format}
	for _, sc := range []config.StudentConfig{
		{},
		{Path: "../testdata/models/qwen2-f32", Tokenizer: "testdata/sft/tok320", Template: "qwen2.5"},
	} {
		c := cfg
		c.Reward.Student = sc
		st, err := rl.NewStudent(c, policy)
		if err != nil {
			t.Fatal(err)
		}
		a, err := st.Complete(context.Background(), rec, "The user wants the weather.", 3)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := st.Complete(context.Background(), rec, "The user wants the weather.", 3)
		other, _ := st.Complete(context.Background(), rec, "", 3)
		st.Close()
		if len(a) != 3 || len(other) != 3 {
			t.Fatalf("student %+v: %d and %d responses, want 3", sc, len(a), len(other))
		}
		for i := range a {
			if !strings.HasPrefix(a[i], "<reason>The user wants the weather.</reason>") || a[i] != b[i] {
				t.Errorf("student %+v: response %d %q (again %q)", sc, i, a[i], b[i])
			}
			if strings.HasPrefix(other[i], "<reason>The user") {
				t.Errorf("without reasoning the student got the prefix: %q", other[i])
			}
		}
		if !s.Model.AdaptersOn() {
			t.Error("the student left the policy's adapters off")
		}
	}
	if _, err := rl.NewStudent(config.Config{Reward: config.RewardConfig{Student: config.StudentConfig{Adapter: "x"}}}, policy); err == nil {
		t.Error("a student adapter without a path was accepted")
	}
}

// One GRPO step with reward r2if and its student: the reward parts are
// logged.
func TestGRPOWithR2IF(t *testing.T) {
	cfg := rlTinyConfig(t.TempDir(), "grpo")
	cfg.Format, cfg.Reward.Name = "reason_tool", "r2if"
	cfg.Optim.MaxSteps = 1
	var log bytes.Buffer
	if _, err := GRPO(context.Background(), cfg, RLOptions{Log: &log}); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	m := trainMetrics(t, cfg.Run.Dir)[0]
	for _, k := range []string{"reward_binary", "reward_cer", "reward_smv"} {
		if _, ok := m[k]; !ok {
			t.Errorf("%s not logged: %v", k, m)
		}
	}
}
