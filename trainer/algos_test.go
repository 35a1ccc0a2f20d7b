package trainer

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/reward"
	"github.com/argrl/argrl/rollout"
	"github.com/argrl/argrl/trainer/ckpt"
	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/metrics"
)

// splitReward is letterReward on the records whose id ends in an odd
// digit and a constant 0.5 on the others, so about half the groups have
// no reward spread: dynamic sampling has something to drop.
type splitReward struct{ letterReward }

func (s splitReward) Score(ctx context.Context, rec *data.Record, text string) (*reward.Result, error) {
	if id := rec.ID; id != "" && (id[len(id)-1]-'0')%2 == 0 {
		return &reward.Result{Reward: 0.5, Parts: map[string]float64{}, Terms: map[string]float64{"first": 0.5, "second": 0}}, nil
	}
	return s.letterReward.Score(ctx, rec, text)
}

// tinyShipped loads configs/grpo-tiny.yaml (or ppo-tiny) with sets, paths
// from the repository root and a fresh run directory.
func tinyShipped(t *testing.T, name string, sets ...string) config.Config {
	t.Helper()
	cfg, err := config.Load("../configs/"+name+".yaml", sets)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Run.Dir = t.TempDir()
	cfg.Model.Path = "../" + cfg.Model.Path
	cfg.Data.Train, cfg.Data.Val = "../"+cfg.Data.Train, "../"+cfg.Data.Val
	return cfg
}

// Each option of docs/contracts.md §5's variants on the shipped tiny
// configs, two steps: once with their own reward (RM-3; a random model
// fails every gate, so the groups are flat) and once with the letters
// reward (groups with spread). On the CPU backend ρ = 1 exactly at the
// first mini-batch whatever the option; each option logs its own metrics.
func TestTinyConfigAlgorithmsRun(t *testing.T) {
	cases := []struct {
		name, file string
		sets       []string
		check      func(t *testing.T, m metrics.Metrics)
	}{
		{"dynamic_sampling", "grpo-tiny", []string{"dynamic_sampling.enabled=true", "dynamic_sampling.max_batches=2"}, func(t *testing.T, m metrics.Metrics) {
			if v, ok := m["zero_std_frac"]; !ok || v != 0 {
				t.Errorf("zero_std_frac %v (logged %v), want 0", v, ok)
			}
			for _, k := range []string{"resampled_groups", "groups_trained", "zero_std_frac_sampled"} {
				if _, ok := m[k]; !ok {
					t.Errorf("%s not logged", k)
				}
			}
		}},
		{"overlong_filter", "grpo-tiny", []string{"overlong.mode=filter"}, nil},
		{"overlong_penalty", "grpo-tiny", []string{"overlong.mode=penalty", "overlong.buffer=8", "overlong.penalty=0.5"}, func(t *testing.T, m metrics.Metrics) {
			if p, ok := m["overlong_penalty_mean"]; !ok || p > 0 || p < -0.5 {
				t.Errorf("overlong_penalty_mean %v (logged %v), want in [−0.5, 0]", p, ok)
			}
		}},
		{"gspo", "grpo-tiny", []string{"is_level=sequence", "clip.eps_low=0.0003", "clip.eps_high=0.0004", "loss_agg=seq-mean-token-mean"}, nil},
		{"rloo", "grpo-tiny", []string{"adv.estimator=rloo"}, nil},
		{"reinforce++", "grpo-tiny", []string{"adv.estimator=reinforce++"}, nil},
		{"per_part", "grpo-tiny", []string{"adv.per_part=true"}, nil},
		{"tis", "grpo-tiny", []string{"tis.cap=2"}, func(t *testing.T, m metrics.Metrics) {
			// The training forward reproduces the sampler bit for bit on CPU.
			for _, k := range []string{"rollout_train_kl", "rollout_train_ratio_max", "tis_clip_frac", "time_old_s"} {
				if _, ok := m[k]; !ok {
					t.Errorf("%s not logged", k)
				}
			}
			if m["rollout_train_kl"] != 0 || m["rollout_train_ratio_max"] != 1 || m["tis_clip_frac"] != 0 {
				t.Errorf("mismatch on CPU: kl %v, max ratio %v, clipped %v; want 0, 1, 0",
					m["rollout_train_kl"], m["rollout_train_ratio_max"], m["tis_clip_frac"])
			}
		}},
		{"ppo", "ppo-tiny", []string{"overlong.mode=penalty", "overlong.buffer=8", "is_level=sequence", "tis.cap=2"}, nil},
	}
	for _, c := range cases {
		for _, rw := range []reward.Reward{nil, letterReward{want: "aeiou"}} {
			name := c.name + "/shipped"
			if rw != nil {
				name = c.name + "/letters"
			}
			t.Run(name, func(t *testing.T) {
				cfg := tinyShipped(t, c.file, append([]string{"optim.max_steps=2"}, c.sets...)...)
				var log bytes.Buffer
				run := GRPO
				if cfg.Algo == "ppo" {
					run = PPO
				}
				res, err := run(context.Background(), cfg, RLOptions{Log: &log, Reward: rw})
				if err != nil {
					t.Fatalf("%v\n%s", err, log.String())
				}
				ms := trainMetrics(t, cfg.Run.Dir)
				if res.Steps != 2 || len(ms) != 2 || res.Checkpoint == "" {
					t.Fatalf("%d steps, %d train lines, checkpoint %q", res.Steps, len(ms), res.Checkpoint)
				}
				for i, m := range ms {
					if d, ok := m["ratio_dev_first"]; !ok || d != 0 {
						t.Errorf("step %d: ratio_dev_first %v, want exactly 0", i+1, d)
					}
					if l := m["loss"]; math.IsNaN(l) || math.IsInf(l, 0) {
						t.Errorf("step %d: loss %v", i+1, l)
					}
					if c.check != nil {
						c.check(t, m)
					}
				}
				if rw != nil && cfg.Algo == "grpo" && !(ms[0]["adv_abs_mean"] > 0) && c.name != "overlong_filter" {
					t.Errorf("letters reward: adv_abs_mean %v, want > 0", ms[0]["adv_abs_mean"])
				}
			})
		}
	}
}

// Dynamic sampling on a task where half the prompts carry no signal: the
// steps resample, train on full batches of informative groups only, and
// log zero_std_frac 0 while the sampled groups had some with zero spread.
func TestDynamicSamplingResamples(t *testing.T) {
	cfg := rlTinyConfig(t.TempDir(), "grpo")
	cfg.DynamicSampling.Enabled, cfg.DynamicSampling.MaxBatches = true, 8
	runRL(t, cfg, RLOptions{Reward: splitReward{letterReward{want: "aeiou"}}})
	resampled, sampledZero := 0.0, 0.0
	for i, m := range trainMetrics(t, cfg.Run.Dir) {
		if m["zero_std_frac"] != 0 || m["groups_trained"] != 2 {
			t.Errorf("step %d: zero_std_frac %v, %v groups trained; want 0 and 2", i+1, m["zero_std_frac"], m["groups_trained"])
		}
		resampled += m["resampled_groups"]
		sampledZero += m["zero_std_frac_sampled"]
	}
	t.Logf("groups resampled over the run: %v; sum of zero_std_frac_sampled: %v", resampled, sampledZero)
	if resampled == 0 || sampledZero == 0 {
		t.Errorf("no step resampled (%v groups) or met a zero-spread group (%v)", resampled, sampledZero)
	}
}

// A run with dynamic sampling (and, in "all", every other option too)
// killed after 3 steps and resumed ends bit-identical to a straight run:
// the extra prompts come from the Batcher, whose position the checkpoint
// holds.
func TestRLResumeBitIdenticalVariants(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(*config.Config)
	}{
		{"dynamic_sampling", func(c *config.Config) {}},
		{"all", func(c *config.Config) {
			c.Overlong.Mode, c.Overlong.Buffer = "penalty", 4
			c.Adv.PerPart, c.IsLevel, c.TIS.Cap = true, "sequence", 2
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := t.TempDir(), t.TempDir()
			ca, cb := rlTinyConfig(a, "grpo"), rlTinyConfig(b, "grpo")
			for _, cfg := range []*config.Config{&ca, &cb} {
				cfg.DynamicSampling.Enabled, cfg.DynamicSampling.MaxBatches = true, 3
				c.set(cfg)
			}
			o := RLOptions{Reward: splitReward{letterReward{want: "aeiou"}}}
			runRL(t, ca, o)
			ob := o
			ob.StopAfter = 3
			runRL(t, cb, ob)
			ob.StopAfter, ob.Resume = 0, true
			runRL(t, cb, ob)
			sameRun(t, a, b, 6, false)
			resampled := 0.0
			for _, m := range trainMetrics(t, a) {
				resampled += m["resampled_groups"]
			}
			if resampled == 0 {
				t.Error("the run never resampled: the test does not exercise the extra batches")
			}
		})
	}
}

// overlong.mode filter keeps the rollouts that stopped (and have tokens);
// penalty adds DAPO's length penalty to the rewards: L = 8, buffer 4,
// penalty 0.5 gives 0, 0, −0.125, −0.5 for 3, 4, 5 and 8 tokens.
func TestOverlongFilterAndPenalty(t *testing.T) {
	mk := func(n int, f rollout.Finish) *item {
		return &item{sample: rollout.Sample{IDs: make([]int32, n), Finish: f}}
	}
	items := []*item{mk(3, rollout.FinishStop), mk(4, rollout.FinishStop), mk(5, rollout.FinishStop), mk(8, rollout.FinishLength),
		mk(0, rollout.FinishStop), mk(6, rollout.FinishContext)}
	cfg := config.Default()
	cfg.Rollout.MaxNewTokens = 8
	cfg.Overlong = config.OverlongConfig{Mode: "filter", Buffer: 4, Penalty: 0.5}
	r := &rlRun{Run: &Run{Config: cfg}, rlSpec: rlSpec{g: 2}}
	if got := r.trainable(items); len(got) != 3 || got[0] != items[0] || got[1] != items[1] || got[2] != items[2] {
		t.Errorf("filter kept %d rollouts, want the first three (stopped, non-empty)", len(got))
	}
	r.Config.Overlong.Mode = "none"
	if got := r.trainable(items); len(got) != 5 {
		t.Errorf("none kept %d rollouts, want the 5 non-empty ones", len(got))
	}
	r.Config.Overlong.Mode = "penalty"
	rewards := []float64{1, 1, 1, 1, 1, 1}
	m := metrics.Metrics{}
	r.shape(items, rewards, m)
	want := []float64{1, 1, 0.875, 0.5, 1, 0.75}
	for i := range want {
		if rewards[i] != want[i] || items[i].shaping != want[i]-1 {
			t.Errorf("rollout %d: reward %v (shaping %v), want %v", i, rewards[i], items[i].shaping, want[i])
		}
	}
	if !near(m["overlong_penalty_mean"], -0.875/6) {
		t.Errorf("overlong_penalty_mean %v", m["overlong_penalty_mean"])
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

// On the CPU backend the training forward reproduces the sampler's
// log-probs, so tis.cap changes nothing: π_old is the same numbers and
// every weight is 1; the adapter and the optimizer state after 3 steps are
// byte-identical to a run without it.
func TestTISIsNoOpOnCPU(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	ca, cb := rlTinyConfig(a, "grpo"), rlTinyConfig(b, "grpo")
	ca.Optim.MaxSteps, cb.Optim.MaxSteps, cb.TIS.Cap = 3, 3, 2
	runRL(t, ca, RLOptions{})
	runRL(t, cb, RLOptions{})
	ck := filepath.Join(ckpt.CheckpointsDir, ckpt.StepName(3))
	for _, f := range []string{"adapter_model.safetensors", ckpt.OptimizerFile} {
		if !filesEqual(t, filepath.Join(a, ck, f), filepath.Join(b, ck, f)) {
			t.Errorf("%s differs with tis.cap 2", f)
		}
	}
	for i, m := range trainMetrics(t, b) {
		if m["rollout_train_kl"] != 0 || m["rollout_train_ratio_max"] != 1 {
			t.Errorf("step %d: rollout_train_kl %v, max ratio %v", i+1, m["rollout_train_kl"], m["rollout_train_ratio_max"])
		}
	}
}
