package trainer

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/metrics"
)

var updatePinned = flag.Bool("update-pinned", false, "rewrite trainer/testdata/pinned from this run")

// timingKey matches the metrics that measure wall-clock time (and rates
// over it): the only keys whose values differ between two runs.
var timingKey = regexp.MustCompile(`,"(time_[a-z_]+|[a-z_]+_per_s)":[^,}]+`)

// The metrics.jsonl bytes of the tiny configs, timings removed, are
// pinned: a refactor of the step (how the work is dealt, gathered and
// accumulated) must leave every logged number as it was, to the last bit.
// The files were written by the code before issue 30's refactor
// (-update-pinned rewrites them; a change to them needs a reason).
func TestPinnedMetrics(t *testing.T) {
	cases := []struct {
		name, config string
		sets         []string
	}{
		{"sft-tiny", "sft-tiny", []string{"optim.max_steps=3", "eval_every=3"}},
		{"sft-tiny-shares2", "sft-tiny", []string{"optim.max_steps=2", "eval_every=2", "dist.shares=2"}},
		{"grpo-tiny", "grpo-tiny", []string{"optim.max_steps=2", "eval_every=2"}},
		// The demo's trained base model on the multi-turn prompts (one
		// turn): rewards with spread, so the advantages, the surrogate
		// and the clip are not all zero.
		{"grpo-base", "grpo-tiny", []string{"optim.max_steps=2", "eval_every=2", "model.path=configs/demo/base-model", "model.init=pretrained", "model.max_len=1024", "data.train=trainer/testdata/multiturn/train.jsonl", "data.val=trainer/testdata/multiturn/val.jsonl", "kl.coef=0.05", "rollout.max_new_tokens=48", "data.val_max=2"}},
		{"grpo-base-shares2", "grpo-tiny", []string{"optim.max_steps=2", "eval_every=2", "model.path=configs/demo/base-model", "model.init=pretrained", "model.max_len=1024", "data.train=trainer/testdata/multiturn/train.jsonl", "data.val=trainer/testdata/multiturn/val.jsonl", "rollout.max_new_tokens=48", "dist.shares=2", "ppo.mini_batch=0", "optim.batch_size=1", "optim.grad_accum=2", "data.val_max=2"}},
		{"ppo-tiny", "ppo-tiny", []string{"optim.max_steps=2", "eval_every=2"}},
		{"ppo-base-shares2", "ppo-tiny", []string{"optim.max_steps=2", "eval_every=2", "model.path=configs/demo/base-model", "model.init=pretrained", "dist.shares=2"}},
		{"grpo-multiturn-tiny", "grpo-multiturn-tiny", []string{"optim.max_steps=1", "eval_every=1", "data.val_max=2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := config.Load("../configs/"+c.config+".yaml", c.sets)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Run.Dir = t.TempDir()
			cfg.Model.Path = "../" + cfg.Model.Path
			cfg.Data.Train, cfg.Data.Val = "../"+cfg.Data.Train, "../"+cfg.Data.Val
			var log bytes.Buffer
			switch cfg.Algo {
			case "sft":
				_, err = SFT(context.Background(), cfg, SFTOptions{Log: &log})
			case "grpo":
				_, err = GRPO(context.Background(), cfg, RLOptions{Log: &log})
			case "ppo":
				_, err = PPO(context.Background(), cfg, RLOptions{Log: &log})
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, log.String())
			}
			raw, err := os.ReadFile(filepath.Join(cfg.Run.Dir, metrics.File))
			if err != nil {
				t.Fatal(err)
			}
			got := timingKey.ReplaceAll(raw, nil)
			if bytes.Equal(got, raw) {
				t.Fatal("no timing key removed: the pattern no longer matches the log")
			}
			path := filepath.Join("testdata", "pinned", c.name+".jsonl")
			if *updatePinned {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
				for i := 0; i < max(len(gl), len(wl)); i++ {
					var g, w []byte
					if i < len(gl) {
						g = gl[i]
					}
					if i < len(wl) {
						w = wl[i]
					}
					if !bytes.Equal(g, w) {
						t.Fatalf("metrics.jsonl line %d differs from %s:\n got %s\nwant %s", i+1, path, g, w)
					}
				}
			}
		})
	}
}
