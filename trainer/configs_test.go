package trainer

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every YAML file under configs/ (subdirectories included) opens with the
// command that runs it, loads with no unknown key and validates (RL
// configs with ValidateRL too).
func TestConfigsLoadAndValidate(t *testing.T) {
	var files []string
	err := filepath.WalkDir("../configs", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"grpo-rm1", "grpo-rm2", "grpo-rm3", "grpo-rm3-beta1.5", "grpo-rm3-beta3", "ppo-rm3", "ppo-rm3-beta3",
		"sft-then-grpo", "decomposed", "binary", "r2if", "grpo-tiny", "ppo-tiny"}
	have := map[string]bool{}
	for _, f := range files {
		rel := filepath.ToSlash(strings.TrimPrefix(f, "../"))
		have[strings.TrimSuffix(rel, ".yaml")] = true
		cfg, err := Load(f, nil)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		first, _ := bufio.NewReader(fh).ReadString('\n')
		fh.Close()
		cmd := "# train " + cfg.Algo + " --config " + rel
		if strings.TrimSpace(first) != cmd {
			t.Errorf("%s: first line %q, want %q", f, strings.TrimSpace(first), cmd)
		}
		if cfg.Algo == "grpo" || cfg.Algo == "ppo" {
			if err := cfg.ValidateRL(); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
	}
	t.Logf("%d configs: %v", len(files), files)
	for _, n := range want {
		if !have["configs/"+n] {
			t.Errorf("configs/%s.yaml is missing", n)
		}
	}
	// Spot checks that the ablations differ where they should.
	for _, c := range []struct {
		file string
		ok   func(Config) bool
	}{
		{"grpo-rm1", func(c Config) bool { return c.Reward.Name == "rm1" && c.TokenWeight.Beta == 1 }},
		{"grpo-rm3-beta1.5", func(c Config) bool { return c.Reward.Name == "rm3" && c.TokenWeight.Beta == 1.5 }},
		{"ppo-rm3-beta3", func(c Config) bool { return c.Algo == "ppo" && c.TokenWeight.Beta == 3 }},
		{"sft-then-grpo", func(c Config) bool { return c.Init.Adapter != "" && c.Init.Merge }},
		{"r2if", func(c Config) bool {
			return c.Reward.Name == "r2if" && c.Format == "reason_tool" && c.Reward.R2IF.WBinary == 3
		}},
		{"grpo-rm3", func(c Config) bool {
			return c.Rollout.G == 8 && c.Rollout.Temperature == 0.6 && c.Rollout.TopP == 0.95 && c.Rollout.MaxNewTokens == 512
		}},
	} {
		cfg, err := Load("../configs/"+c.file+".yaml", nil)
		if err != nil || !c.ok(cfg) {
			t.Errorf("configs/%s.yaml: %v %+v", c.file, err, cfg.Reward)
		}
	}
}

// A wrong reward name or β ≤ 0 is refused with the key named and the valid
// choices listed.
func TestRLConfigErrors(t *testing.T) {
	_, err := Load("../configs/grpo-rm3.yaml", []string{"reward.name=rm4"})
	if err == nil || !strings.Contains(err.Error(), `key "reward.name": "rm4" is not one of rm1, rm2, rm3, decomposed, binary, r2if`) {
		t.Errorf("reward.name=rm4: %v", err)
	}
	for _, b := range []string{"0", "-1"} {
		_, err := Load("../configs/grpo-rm3.yaml", []string{"token_weight.beta=" + b})
		if err == nil || !strings.Contains(err.Error(), `key "token_weight.beta": must be > 0`) {
			t.Errorf("token_weight.beta=%s: %v", b, err)
		}
	}
	cfg, err := Load("../configs/grpo-rm3.yaml", []string{"format=tool_call", "reward.name=r2if", "ppo.epochs=0", "ppo.lambda=2"})
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.ValidateRL()
	for _, want := range []string{`r2if reads the <reason> block`, `"ppo.epochs": must be ≥ 1`, `"ppo.lambda": must be in [0,1]`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidateRL: %v, want %q", err, want)
		}
	}
	// The recipe refuses the wrong algorithm before loading anything.
	cfg.Algo = "sft"
	if _, err := GRPO(context.Background(), cfg, RLOptions{}); err == nil || !strings.Contains(err.Error(), `"algo"`) {
		t.Errorf("GRPO with algo sft: %v", err)
	}
}

// The tiny configs run as shipped (two steps, paths from the repository
// root).
func TestTinyConfigsRun(t *testing.T) {
	for _, name := range []string{"grpo-tiny", "ppo-tiny"} {
		cfg, err := Load("../configs/"+name+".yaml", []string{"optim.max_steps=2", "eval_every=2"})
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
		recs, _ := ReadMetrics(filepath.Join(cfg.Run.Dir, MetricsFile))
		evals := 0
		for _, r := range recs {
			if r.Kind == "eval" {
				evals++
				if _, ok := r.Values["fcm"]; !ok {
					t.Errorf("%s: eval line without fcm: %v", name, r.Values)
				}
			}
		}
		if res.Steps != 2 || evals != 1 || res.Checkpoint == "" {
			t.Errorf("%s: %d steps, %d evals, checkpoint %q\n%s", name, res.Steps, evals, res.Checkpoint, log.String())
		}
		// `train plot` draws the RL curves: reward, KL, clip fraction, eval metrics.
		files, err := Plot(filepath.Join(cfg.Run.Dir, MetricsFile), filepath.Join(cfg.Run.Dir, "plots"))
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
