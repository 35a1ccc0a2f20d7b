package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeCfg(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigOverrides(t *testing.T) {
	p := writeCfg(t, "# train grpo --config c.yaml\nalgo: grpo\nreward:\n  name: rm2\nlora:\n  r: 16\n  targets: [q, v]\ntoken_weight: {beta: 1.5}\n")
	t.Setenv("ARGRL_KL_COEF", "0.05")
	c, err := Load(p, []string{"lora.alpha=8", "rollout.top_p=0.9"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Algo != "grpo" || c.Reward.Name != "rm2" || c.LoRA.R != 16 || c.TokenWeight.Beta != 1.5 {
		t.Fatalf("file not applied: %+v", c)
	}
	if len(c.LoRA.Targets) != 2 || c.LoRA.Targets[1] != "v" {
		t.Fatalf("list not applied: %v", c.LoRA.Targets)
	}
	if c.KL.Coef != 0.05 {
		t.Fatalf("env not applied: %v", c.KL.Coef)
	}
	if c.LoRA.Alpha != 8 || c.Rollout.TopP != 0.9 {
		t.Fatalf("--set not applied: %v %v", c.LoRA.Alpha, c.Rollout.TopP)
	}
	if c.Rollout.G != 8 || c.Optim.LR != 1e-4 {
		t.Fatalf("defaults lost: %+v", c)
	}
}

func TestConfigPrecedence(t *testing.T) {
	p := writeCfg(t, "kl:\n  coef: 0.1\n")
	t.Setenv("ARGRL_KL_COEF", "0.2")
	c, err := Load(p, []string{"kl.coef=0.3"})
	if err != nil {
		t.Fatal(err)
	}
	if c.KL.Coef != 0.3 {
		t.Fatalf("want --set to win, got %v", c.KL.Coef)
	}
}

func TestConfigErrorsNameKeyAndLine(t *testing.T) {
	cases := []struct {
		name, body string
		sets       []string
		want       []string
	}{
		{"unknown top key", "algo: grpo\nbogus: 1\n", nil, []string{"c.yaml:2", `"bogus"`}},
		{"unknown nested key", "lora:\n  r: 4\n  rank: 8\n", nil, []string{"c.yaml:3", `"lora.rank"`}},
		{"wrong type", "lora:\n  r: many\n", nil, []string{"c.yaml:2", `"lora.r"`}},
		{"section as scalar", "kl: 3\n", nil, []string{"c.yaml:1", `"kl"`}},
		{"bad reward", "reward:\n  name: rm9\n", nil, []string{"reward.name", "rm1", "r2if"}},
		{"beta not positive", "token_weight:\n  beta: 0\n", nil, []string{"token_weight.beta"}},
		{"unknown --set", "", []string{"lora.rnk=3"}, []string{"--set lora.rnk", `"lora.rnk"`}},
		{"bad --set type", "", []string{"optim.lr=fast"}, []string{"optim.lr"}},
		{"--set without =", "", []string{"optim.lr"}, []string{"key=value"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := writeCfg(t, tc.body)
			_, err := Load(p, tc.sets)
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestConfigUnknownEnv(t *testing.T) {
	t.Setenv("ARGRL_KL_COEFF", "1")
	_, err := Load("", nil)
	if err == nil || !strings.Contains(err.Error(), "ARGRL_KL_COEFF") {
		t.Fatalf("want error naming ARGRL_KL_COEFF, got %v", err)
	}
}

func TestConfigEmptyFileIsDefaults(t *testing.T) {
	c, err := Load(writeCfg(t, "# only a comment\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	d := Default()
	if c.Rollout.G != d.Rollout.G || c.Rollout.TopP != d.Rollout.TopP || c.KL != d.KL {
		t.Fatalf("empty file changed defaults")
	}
}
