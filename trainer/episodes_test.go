package trainer

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/rollout"
	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/metrics"
	"github.com/argrl/argrl/trainer/rl"
)

// multiTurnRun prepares a GRPO run of configs/grpo-multiturn-tiny.yaml
// (the demo's base model on the multi-turn synthetic dialogues) and rolls
// out and scores its first step.
func multiTurnRun(t *testing.T, sets ...string) (*rlRun, stepSample, []int) {
	t.Helper()
	cfg := tinyShipped(t, "grpo-multiturn-tiny", append([]string{"eval_every=0"}, sets...)...)
	var log bytes.Buffer
	r, err := newRLRun(cfg, RLOptions{Log: &log}, rlSpec{name: "grpo", g: cfg.Rollout.G})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	t.Cleanup(func() {
		if err := r.close(); err != nil {
			t.Error(err)
		}
	})
	ctx := context.Background()
	sb, err := r.Next(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	smp, err := r.sample(ctx, 1, sb, metrics.Metrics{})
	if err != nil {
		t.Fatal(err)
	}
	return r, smp, sb.Records()
}

// The trainer trains on the ids the engine sampled, never re-tokenized:
// an engine of its own on the same model, records, parameters and seed
// rolls out the same episodes, and each rollout's training sequence is
// exactly its prompt (the training example's, as SFT tokenizes it) and
// its sample's ids, π_old its log-probs, the loss mask its mask. What the
// model saw is the chat template's rendering of the episode's
// conversation, turn by turn.
func TestMultiTurnTrainsSampledIDs(t *testing.T) {
	r, smp, recs := multiTurnRun(t)
	exs := r.Setup.Train.Examples
	rs := make([]data.Record, len(recs))
	for i, k := range recs {
		rs[i] = *exs[k].Rec
	}
	eng, err := rollout.New(r.Setup.Model, rollout.Options{Batch: 8, MaxLen: r.Config.Model.MaxLen, Tokenizer: r.Setup.Tokenizer})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	p := r.params
	p.Seed = rl.StreamSeed(r.Config.Run.Seed, "rollout", 1)
	groups, err := eng.Episodes(context.Background(), rs, p, r.mt.conv)
	if err != nil {
		t.Fatal(err)
	}
	if len(smp.all) != len(groups)*r.g {
		t.Fatalf("%d rollouts for %d groups of %d", len(smp.all), len(groups), r.g)
	}
	tok, tmpl, f := r.Setup.Tokenizer, r.Setup.Template, r.Setup.Format
	eot, _ := tok.TokenID("<|im_end|>")
	multi, envIDs, rendered := 0, 0, 0
	for i, g := range groups {
		ex := &exs[recs[i]]
		for k, s := range g.Samples {
			it := smp.all[i*r.g+k]
			want := append(slices.Clone(g.PromptIDs), s.IDs...)
			if !slices.Equal(it.seq, want) || it.start != len(g.PromptIDs) || !slices.Equal(it.seq[:it.start], ex.IDs[:ex.PromptLen]) {
				t.Fatalf("%s/%d: the training sequence is not the prompt and the sampled ids", g.ID, k)
			}
			if !slices.Equal(it.roll.OldLP, s.LogProbs) || !slices.Equal(it.roll.Mask, s.Mask) || it.sample.Text != s.Text {
				t.Fatalf("%s/%d: π_old, the mask or the text is not the sample's", g.ID, k)
			}
			envIDs += len(s.IDs) - sampledLen(&s)
			if len(s.Turns) < 2 {
				continue
			}
			multi++
			// The template's rendering of the conversation up to the last
			// turn is what precedes that turn's sampled ids.
			conv := slices.Clone(ex.Rec.Messages)
			for _, tu := range s.Turns[:len(s.Turns)-1] {
				content := tok.Decode(s.IDs[tu.Start:tu.End], false)
				if s.IDs[tu.End-1] == eot {
					content = strings.TrimSuffix(content, "<|im_end|>")
				}
				conv = append(append(conv, data.Message{Role: "assistant", Content: content}), tu.Env...)
			}
			rec := *ex.Rec
			rec.Messages = conv
			ren, err := tmpl.Render(rec, f, false)
			if err != nil {
				t.Fatal(err)
			}
			last := s.Turns[len(s.Turns)-1]
			if got := tok.Decode(it.seq[:it.start+last.Start], false); got != ren.Prompt {
				t.Errorf("%s/%d: the trajectory before turn %d is not the template's rendering:\n got %q\nwant %q", g.ID, k, len(s.Turns)-1, got, ren.Prompt)
			}
			rendered++
		}
	}
	if multi == 0 || envIDs == 0 || rendered == 0 {
		t.Fatalf("%d multi-turn episodes, %d environment ids: nothing was checked", multi, envIDs)
	}
	t.Logf("%d rollouts, %d with several turns, %d environment ids", len(smp.all), multi, envIDs)
}

// The loss masks the environment's tokens, through the trainer's update:
// the objective counts the sampled tokens only, the training forward
// reproduces the rollout's log-probs on them (ρ = 1 to float32 rounding:
// the ids are the rollout's, in place), and whatever π_old, the
// advantages or the reference hold at the environment's positions, the
// accumulated gradients are the same bit for bit (a sampled position does
// change them).
func TestMultiTurnLossMasksToolTokens(t *testing.T) {
	r, smp, _ := multiTurnRun(t, "kl.coef=0.05")
	cfg := r.Config
	spec := rl.AdvSpec{Estimator: cfg.Adv.Estimator, NormByStd: cfg.Adv.NormByStd, Delta: cfg.Adv.Delta}
	m := metrics.Metrics{}
	train, err := r.groupAdvantages(spec, cfg.TokenWeight.Beta)(smp.items, smp.rewards, m)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.reference(train, m); err != nil {
		t.Fatal(err)
	}
	obj := rl.Objective{EpsLow: cfg.Clip.EpsLow, EpsHigh: cfg.Clip.EpsHigh, KLCoef: cfg.KL.Coef, KL: cfg.KL.Estimator}
	lens := make([]int, len(train))
	sampled, all := 0, 0
	for i, it := range train {
		lens[i] = it.roll.Tokens()
		sampled += lens[i]
		all += it.roll.Len()
	}
	agg, err := rl.NewAggregation(cfg.LossAgg, lens, r.maxSampled())
	if err != nil {
		t.Fatal(err)
	}
	step := func() (rl.LossStats, [][]float32) {
		st, err := r.miniBatch(train, obj, agg)
		if err != nil {
			t.Fatal(err)
		}
		be := r.Setup.Backend
		var gs [][]float32
		for _, p := range r.Opt.Params() {
			h := make([]float32, p.G.Len())
			be.CopyOut(h, p.G)
			gs = append(gs, h)
		}
		if err := be.Sync(); err != nil {
			t.Fatal(err)
		}
		return st, gs
	}
	st, g1 := step()
	if st.Tokens != sampled || sampled >= all {
		t.Fatalf("the loss counted %d tokens; the rollouts sampled %d of %d", st.Tokens, sampled, all)
	}
	if st.MaxRatioDev != 0 {
		t.Errorf("max |ρ−1| %g at the first mini-batch: the trained ids are not the rollout's", st.MaxRatioDev)
	}
	nonzero := false
	for _, g := range g1 {
		for _, x := range g {
			nonzero = nonzero || x != 0
		}
	}
	if !nonzero {
		t.Fatal("zero gradients: the comparison below would say nothing")
	}
	var first *item // an item with a sampled token after the environment's
	for _, it := range train {
		for k, on := range it.roll.Mask {
			if !on {
				it.roll.OldLP[k], it.roll.Adv[k], it.roll.RefLP[k] = -9, 50, 3
			} else if k > 0 && !it.roll.Mask[k-1] && first == nil {
				first = it
			}
		}
	}
	st2, g2 := step()
	for i := range g1 {
		if !slices.Equal(g1[i], g2[i]) {
			t.Fatalf("%s: the environment's positions changed the gradients", r.Opt.Params()[i].Name)
		}
	}
	if st2.Tokens != st.Tokens || st2.Loss != st.Loss || st2.KLSum != st.KLSum {
		t.Errorf("the environment's positions changed the loss: %+v vs %+v", st, st2)
	}
	if first == nil {
		t.Fatal("no sampled turn after an environment answer")
	}
	for k, on := range first.roll.Mask {
		if on && k > 0 && !first.roll.Mask[k-1] {
			first.roll.Adv[k] += 1 // the first token of a later turn
			break
		}
	}
	_, g3 := step()
	same := true
	for i := range g1 {
		same = same && slices.Equal(g1[i], g3[i])
	}
	if same {
		t.Error("changing a later turn's sampled token changed no gradient")
	}
	t.Logf("%d of %d tokens trained; max |ρ−1| %.2e", sampled, all, st.MaxRatioDev)
}

// The objective's variants and PPO on multi-turn rollouts: two steps each
// of the shipped multi-turn config, finite losses, ρ = 1 to rounding at
// the first mini-batch, several turns per episode and the episode
// metrics; an evaluation of greedy episodes; the rollouts file with each
// turn's gold and no β weight on the environment's tokens.
func TestMultiTurnAlgorithmsRun(t *testing.T) {
	for _, c := range []struct {
		name string
		sets []string
	}{
		{"grpo", []string{"eval_every=2"}},
		{"ppo", []string{"ppo.epochs=2", "ppo.mini_batch=4"}},
		{"per_part", []string{"adv.per_part=true"}},
		{"gspo", []string{"is_level=sequence", "clip.eps_low=0.0003", "clip.eps_high=0.0004", "loss_agg=seq-mean-token-mean"}},
		{"tis", []string{"tis.cap=2"}},
		{"dynamic_sampling", []string{"dynamic_sampling.enabled=true", "dynamic_sampling.max_batches=2"}},
		{"reinforce++", []string{"adv.estimator=reinforce++", "loss_agg=seq-mean-token-sum-norm"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := tinyShipped(t, "grpo-multiturn-tiny", append([]string{"optim.max_steps=2", "eval_every=0", "checkpoint.every=0"}, c.sets...)...)
			run := GRPO
			if c.name == "ppo" {
				cfg.Algo, run = "ppo", PPO
			}
			var log bytes.Buffer
			res, err := run(context.Background(), cfg, RLOptions{Log: &log})
			if err != nil {
				t.Fatalf("%v\n%s", err, log.String())
			}
			ms := trainMetrics(t, cfg.Run.Dir)
			if res.Steps != 2 || len(ms) != 2 {
				t.Fatalf("%d steps, %d train lines", res.Steps, len(ms))
			}
			for i, m := range ms {
				if l := m["loss"]; math.IsNaN(l) || math.IsInf(l, 0) || m["ratio_dev_first"] != 0 {
					t.Errorf("step %d: loss %v, ratio_dev_first %v", i+1, l, m["ratio_dev_first"])
				}
				// Every episode ends one way; dynamic sampling rolls out more.
				n, want := m["finish_done"]+m["finish_max_turns"]+m["finish_context"], cfg.Optim.BatchSize*cfg.Rollout.G
				if c.name == "ppo" {
					want = cfg.Optim.BatchSize
				}
				if !(m["turns_mean"] > 1) || !(m["env_tokens"] > 0) || n < float64(want) || (c.name != "dynamic_sampling" && n != float64(want)) {
					t.Errorf("step %d: turns_mean %v, env_tokens %v, %v finishes for %d rollouts", i+1, m["turns_mean"], m["env_tokens"], n, want)
				}
				for _, k := range []string{"reward_state", "reward_exact_turns", "reward_turn_mean"} {
					if _, ok := m[k]; !ok {
						t.Errorf("step %d: %s not logged", i+1, k)
					}
				}
				if c.name == "tis" && !(m["rollout_train_kl"] < 1e-6) {
					t.Errorf("step %d: rollout_train_kl %v", i+1, m["rollout_train_kl"])
				}
			}
			if c.name != "grpo" {
				return
			}
			recs, err := metrics.Read(cfg.Run.Dir + "/" + metrics.File)
			if err != nil {
				t.Fatal(err)
			}
			evals := 0
			for _, rec := range recs {
				if rec.Kind == "eval" {
					evals++
					for _, k := range []string{"reward_mean", "turns_mean", "state_score", "exact_turns", "fcm"} {
						if _, ok := rec.Values[k]; !ok {
							t.Errorf("eval line without %s: %v", k, rec.Values)
						}
					}
				}
			}
			groups, err := metrics.ReadRollouts(metrics.RolloutsPath(cfg.Run.Dir, 2))
			if err != nil || evals != 1 || len(groups) == 0 {
				t.Fatalf("%d evaluations, rollouts %v (%v)", evals, len(groups), err)
			}
			if !strings.HasPrefix(string(groups[0].Gold), "[[") {
				t.Errorf("rollouts gold %s, want one list of calls per turn", groups[0].Gold)
			}
			zeros := 0
			for _, s := range groups[0].Samples {
				for _, w := range s.Weights {
					if w == 0 {
						zeros++
					}
				}
			}
			if zeros == 0 {
				t.Error("the rollouts file weights the environment's tokens")
			}
		})
	}
}

// A config that asks for multi-turn rollouts with an http environment it
// cannot build, or with another environment than its records', fails
// before any step, naming the key.
func TestMultiTurnBadEnvironment(t *testing.T) {
	cfg := tinyShipped(t, "grpo-multiturn-tiny", "rollout.env.name=http", "rollout.env.url=ftp://x")
	_, err := GRPO(context.Background(), cfg, RLOptions{Log: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), `"rollout.env"`) {
		t.Errorf("GRPO with an ftp environment: %v", err)
	}
	cfg = tinyShipped(t, "grpo-multiturn-tiny", "rollout.env.name=bfcl")
	_, err = GRPO(context.Background(), cfg, RLOptions{Log: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), `"rollout.env.name" is bfcl, but record mt-train-00000-dine_calendar`) {
		t.Errorf("GRPO with the bfcl environment on synth records: %v", err)
	}
}

// Episodes are reproducible through the trainer: 2 steps straight equal 1
// step (checkpointed, then stopped as a kill would) + --resume, byte for
// byte (adapter, optimizer, state) and in every metric.
func TestMultiTurnResumeBitIdentical(t *testing.T) {
	sets := []string{"optim.max_steps=2", "eval_every=0", "checkpoint.every=1", "checkpoint.keep_last=0"}
	a, b := tinyShipped(t, "grpo-multiturn-tiny", sets...), tinyShipped(t, "grpo-multiturn-tiny", sets...)
	run := func(cfg config.Config, o RLOptions) {
		var log bytes.Buffer
		o.Log = &log
		if _, err := GRPO(context.Background(), cfg, o); err != nil {
			t.Fatalf("%v\n%s", err, log.String())
		}
	}
	run(a, RLOptions{})
	run(b, RLOptions{StopAfter: 1})
	run(b, RLOptions{Resume: true})
	sameRun(t, a.Run.Dir, b.Run.Dir, 2, false)
}
