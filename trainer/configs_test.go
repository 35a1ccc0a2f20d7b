package trainer

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/metrics"
)

// The recipe refuses the wrong algorithm before loading anything.
func TestRLRecipeRefusesAlgo(t *testing.T) {
	cfg, err := config.Load("../configs/grpo-rm3.yaml", []string{"format=tool_call", "reward.name=r2if", "ppo.epochs=0", "ppo.lambda=2"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Algo = "sft"
	if _, err := GRPO(context.Background(), cfg, RLOptions{}); err == nil || !strings.Contains(err.Error(), `"algo"`) {
		t.Errorf("GRPO with algo sft: %v", err)
	}
}

// The tiny configs run as shipped (two steps, validation after each, so
// that the evaluation curves have two points; paths from the repository
// root).
func TestTinyConfigsRun(t *testing.T) {
	for _, name := range []string{"grpo-tiny", "ppo-tiny"} {
		cfg, err := config.Load("../configs/"+name+".yaml", []string{"optim.max_steps=2", "eval_every=1"})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Run.Dir = t.TempDir()
		cfg.Model.Path = "../" + cfg.Model.Path
		cfg.Data.Train, cfg.Data.Val = "../"+cfg.Data.Train, "../"+cfg.Data.Val
		var log bytes.Buffer
		run := GRPO
		if cfg.Algo == "ppo" {
			run = PPO
		}
		res, err := run(context.Background(), cfg, RLOptions{Log: &log})
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, log.String())
		}
		recs, _ := metrics.Read(filepath.Join(cfg.Run.Dir, metrics.File))
		evals := 0
		for _, r := range recs {
			if r.Kind == "eval" {
				evals++
				if _, ok := r.Values["fcm"]; !ok {
					t.Errorf("%s: eval line without fcm: %v", name, r.Values)
				}
			}
		}
		if res.Steps != 2 || evals != 2 || res.Checkpoint == "" {
			t.Errorf("%s: %d steps, %d evals, checkpoint %q\n%s", name, res.Steps, evals, res.Checkpoint, log.String())
		}
		// `train plot` draws the RL curves: reward, KL, clip fraction, eval metrics.
		files, err := metrics.Plot(filepath.Join(cfg.Run.Dir, metrics.File), filepath.Join(cfg.Run.Dir, "plots"))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, f := range files {
			got[filepath.Base(f)] = true
		}
		for _, f := range []string{"reward.png", "kl.png", "clip_frac.png", "eval_metrics.png"} {
			if !got[f] {
				t.Errorf("%s: plot wrote %v, not %s", name, files, f)
			}
		}
	}
}
