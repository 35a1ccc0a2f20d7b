package config

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argrl/argrl/kernels"
)

// Every YAML file under configs/ (subdirectories included) opens with the
// command that runs it, loads with no unknown key and validates (RL
// configs with ValidateRL too).
func TestConfigsLoadAndValidate(t *testing.T) {
	var files []string
	err := filepath.WalkDir("../../configs", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"grpo-rm1", "grpo-rm2", "grpo-rm3", "grpo-rm3-beta1.5", "grpo-rm3-beta3", "ppo-rm3", "ppo-rm3-beta3",
		"sft-then-grpo", "decomposed", "binary", "r2if", "grpo-tiny", "ppo-tiny", "grpo-dapo", "grpo-multiturn-tiny"}
	have := map[string]bool{}
	for _, f := range files {
		rel := filepath.ToSlash(strings.TrimPrefix(f, "../../"))
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
		{"grpo-dapo", func(c Config) bool {
			return c.DynamicSampling.Enabled && c.Overlong.Mode == "penalty" && c.Clip.EpsHigh == 0.28 && c.KL.Coef == 0 && c.Reward.Name == "rm3"
		}},
		{"grpo-multiturn-tiny", func(c Config) bool {
			return c.Rollout.MaxTurns > 1 && c.Rollout.Env.Name == "synth" && c.Reward.Name == "rm3" && c.Overlong.Mode == "none"
		}},
		{"grpo-rm3", func(c Config) bool {
			return c.Rollout.G == 8 && c.Rollout.Temperature == 0.6 && c.Rollout.TopP == 0.95 && c.Rollout.MaxNewTokens == 512
		}},
	} {
		cfg, err := Load("../../configs/"+c.file+".yaml", nil)
		if err != nil || !c.ok(cfg) {
			t.Errorf("configs/%s.yaml: %v %+v", c.file, err, cfg.Reward)
		}
	}
}

// A wrong reward name or β ≤ 0 is refused with the key named and the valid
// choices listed.
func TestRLConfigErrors(t *testing.T) {
	_, err := Load("../../configs/grpo-rm3.yaml", []string{"reward.name=rm4"})
	if err == nil || !strings.Contains(err.Error(), `key "reward.name": "rm4" is not one of rm1, rm2, rm3, decomposed, binary, r2if, bfcl`) {
		t.Errorf("reward.name=rm4: %v", err)
	}
	for _, b := range []string{"0", "-1"} {
		_, err := Load("../../configs/grpo-rm3.yaml", []string{"token_weight.beta=" + b})
		if err == nil || !strings.Contains(err.Error(), `key "token_weight.beta": must be > 0`) {
			t.Errorf("token_weight.beta=%s: %v", b, err)
		}
	}
	cfg, err := Load("../../configs/grpo-rm3.yaml", []string{"format=tool_call", "reward.name=r2if", "ppo.epochs=0", "ppo.lambda=2"})
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.ValidateRL()
	for _, want := range []string{`r2if reads the <reason> block`, `"ppo.epochs": must be ≥ 1`, `"ppo.lambda": must be in [0,1]`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidateRL: %v, want %q", err, want)
		}
	}
}

func TestTotalSteps(t *testing.T) {
	o := Default().Optim // 2 epochs
	if n := o.TotalSteps(13); n != 26 {
		t.Fatalf("2 epochs × 13 = %d", n)
	}
	o.MaxSteps = 5
	if n := o.TotalSteps(13); n != 5 {
		t.Fatalf("max_steps 5 gives %d", n)
	}
}

// The README's chain, SFT then RL from its adapter: configs/sft.yaml and
// the paper-000 RL configs (whose init.adapter it feeds) name the same
// base model, tokenizer, chat template and output format, so the adapter
// fits and the RL prompts are those SFT trained on.
func TestPaperConfigsChainAgrees(t *testing.T) {
	sft, err := Load("../../configs/sft.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"grpo-rm1", "grpo-rm2", "grpo-rm3", "grpo-rm3-beta1.5", "grpo-rm3-beta3", "ppo-rm3", "ppo-rm3-beta3", "sft-then-grpo", "grpo-dapo"} {
		c, err := Load("../../configs/"+n+".yaml", nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.Model.Path != sft.Model.Path || c.Model.Tokenizer != sft.Model.Tokenizer || c.Model.Template != sft.Model.Template || c.Format != sft.Format {
			t.Errorf("configs/%s.yaml: model %q (tokenizer %q, template %q), format %q; configs/sft.yaml: %q (%q, %q), %q",
				n, c.Model.Path, c.Model.Tokenizer, c.Model.Template, c.Format, sft.Model.Path, sft.Model.Tokenizer, sft.Model.Template, sft.Format)
		}
	}
	if c, _ := Load("../../configs/sft-then-grpo.yaml", nil); c.Init.Adapter == "" {
		t.Error("configs/sft-then-grpo.yaml names no init.adapter")
	}
}

// Every config's model.backend opens on the default build (no CUDA
// backend linked): "auto" falls back to cpu there.
func TestConfigsBackendOpensOnDefaultBuild(t *testing.T) {
	files, err := filepath.Glob("../../configs/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no configs: %v", err)
	}
	demo, _ := filepath.Glob("../../configs/demo/*.yaml")
	for _, f := range append(files, demo...) {
		c, err := Load(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		be, chosen, err := kernels.Choose(c.Model.Backend)
		if err != nil {
			t.Errorf("%s: model.backend %q: %v", f, c.Model.Backend, err)
			continue
		}
		if !strings.HasPrefix(be.Name(), "cpu") || !strings.HasPrefix(chosen, "cpu") {
			t.Errorf("%s: model.backend %q chose %s (%q) on a build without CUDA", f, c.Model.Backend, be.Name(), chosen)
		}
	}
	if Default().Model.Backend != kernels.Auto {
		t.Errorf("the default model.backend is %q, want %q", Default().Model.Backend, kernels.Auto)
	}
}
