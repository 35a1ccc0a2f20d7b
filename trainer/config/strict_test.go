package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// An integer key refuses a number that is not whole, from every source,
// naming the key and the source; a whole number written as a float (1e3,
// 4.0) is the integer it equals.
func TestIntegerKeysRefuseFractions(t *testing.T) {
	for _, c := range []struct {
		name, body string
		sets       []string
		env        [2]string
		want       []string
	}{
		{"yaml 2.5", "optim:\n  max_steps: 2.5\n", nil, [2]string{}, []string{"c.yaml:2", `"optim.max_steps"`, "2.5 is not an integer"}},
		{"yaml 1e-3", "rollout: {g: 1e-3}\n", nil, [2]string{}, []string{"c.yaml:1", `"rollout.g"`, "1e-3 is not an integer"}},
		{"yaml .inf", "eval_every: .inf\n", nil, [2]string{}, []string{`"eval_every"`, "not an integer"}},
		{"--set 4.7", "", []string{"optim.batch_size=4.7"}, [2]string{}, []string{"--set optim.batch_size", "4.7 is not an integer"}},
		{"env 2.5", "", nil, [2]string{"ARGRL_OPTIM_MAX_STEPS", "2.5"}, []string{"ARGRL_OPTIM_MAX_STEPS", `"optim.max_steps"`, "2.5 is not an integer"}},
		{"env 1.5e0", "", nil, [2]string{"ARGRL_RUN_SEED", "1.5e0"}, []string{"ARGRL_RUN_SEED", `"run.seed"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.env[0] != "" {
				t.Setenv(c.env[0], c.env[1])
			}
			_, err := Load(writeCfg(t, c.body), c.sets)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	t.Setenv("ARGRL_CHECKPOINT_EVERY", "2e1")
	cfg, err := Load(writeCfg(t, "optim: {max_steps: 1e3, batch_size: 4.0}\n"), []string{"rollout.g=1.6e1"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Optim.MaxSteps != 1000 || cfg.Optim.BatchSize != 4 || cfg.Rollout.G != 16 || cfg.Checkpoint.Every != 20 {
		t.Errorf("max_steps %d batch_size %d g %d every %d, want 1000 4 16 20", cfg.Optim.MaxSteps, cfg.Optim.BatchSize, cfg.Rollout.G, cfg.Checkpoint.Every)
	}
}

// An invalid value is blamed on the source that gave it: a --set value on
// the flag (not the file), an ARGRL_ value on the variable, a file value
// on its line.
func TestValidateBlamesTheSource(t *testing.T) {
	p := writeCfg(t, "algo: grpo\nreward:\n  name: rm2\nkl: {coef: 0.1}\n")
	_, err := Load(p, []string{"reward.name=rm9"})
	if err == nil || !strings.Contains(err.Error(), `--set reward.name: key "reward.name": "rm9"`) || strings.Contains(err.Error(), "c.yaml") {
		t.Errorf("--set: %v", err)
	}
	t.Setenv("ARGRL_TOKEN_WEIGHT_BETA", "-1")
	_, err = Load(p, nil)
	if err == nil || !strings.Contains(err.Error(), `ARGRL_TOKEN_WEIGHT_BETA: key "token_weight.beta"`) {
		t.Errorf("env: %v", err)
	}
	os.Unsetenv("ARGRL_TOKEN_WEIGHT_BETA")
	c, err := Load(p, []string{"ppo.gamma=2"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ValidateRL(); err == nil || !strings.Contains(err.Error(), `--set ppo.gamma: key "ppo.gamma"`) || strings.Contains(err.Error(), "c.yaml") {
		t.Errorf("ValidateRL: %v", err)
	}
	_, err = Load(writeCfg(t, "algo: sft\nreward:\n  name: rm9\n"), nil)
	if err == nil || !strings.Contains(err.Error(), `c.yaml:3: key "reward.name"`) {
		t.Errorf("file: %v", err)
	}
}

// A trainable init.adapter decides lora.r, alpha, dropout and targets; a
// key set to another value is an error naming both values; merged, the
// adapter decides nothing.
func TestAdapterDecidesLoRA(t *testing.T) {
	ad := t.TempDir()
	if err := os.WriteFile(filepath.Join(ad, "adapter_config.json"), []byte(`{"peft_type": "LORA", "r": 16, "lora_alpha": 8,
		"lora_dropout": 0.1, "target_modules": ["v_proj", "q_proj"], "bias": "none"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	base := "init: {adapter: " + ad + "}\n"
	c, err := Load(writeCfg(t, base), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.LoRA.R != 16 || c.LoRA.Alpha != 8 || c.LoRA.Dropout != 0.1 || strings.Join(c.LoRA.Targets, ",") != "q,v" {
		t.Errorf("lora %+v, want the adapter's r 16, alpha 8, dropout 0.1, targets q,v", c.LoRA)
	}
	// The same values given explicitly are fine, in either spelling.
	if _, err := Load(writeCfg(t, base+"lora: {r: 16, targets: [q_proj, v]}\n"), nil); err != nil {
		t.Errorf("agreeing keys: %v", err)
	}
	for _, bad := range []struct {
		body string
		sets []string
		want []string
	}{
		{base + "lora:\n  r: 8\n", nil, []string{`"lora.r" is 8`, "c.yaml:3", "r 16", "adapter_config.json"}},
		{base, []string{"lora.alpha=64"}, []string{`"lora.alpha" is 64`, "--set lora.alpha", "lora_alpha 8"}},
		{base, []string{"lora.targets=[q, k, v]"}, []string{`"lora.targets" is [q, k, v]`, "target_modules [q, v]"}},
	} {
		if _, err := Load(writeCfg(t, bad.body), bad.sets); err == nil {
			t.Errorf("%q %v: accepted", bad.body, bad.sets)
		} else {
			for _, w := range bad.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		}
	}
	// RL adopts no dropout (it trains without); merged, lora.* shape the fresh adapter.
	if c, err := Load(writeCfg(t, base+"lora: {dropout: 0}\n"), []string{"algo=grpo"}); err != nil || c.LoRA.R != 16 || c.LoRA.Dropout != 0 {
		t.Errorf("grpo: %+v %v", c.LoRA, err)
	}
	if c, err := Load(writeCfg(t, "init: {adapter: "+ad+", merge: true}\nlora: {r: 4}\n"), nil); err != nil || c.LoRA.R != 4 || c.LoRA.Alpha != Default().LoRA.Alpha {
		t.Errorf("merged: %+v %v", c.LoRA, err)
	}
}

// Keys lists every key --set takes, and each is one.
func TestKeys(t *testing.T) {
	ks := Keys()
	have := map[string]bool{}
	for _, k := range ks {
		have[k] = true
		if _, err := decodeValue(reflect.TypeOf(Config{}), k, "", "--set "+k); err != nil {
			t.Errorf("key %q: %v", k, err)
		}
	}
	for _, w := range []string{"optim.max_steps", "rollout.env.name", "lora.targets", "reward.decomposed.args_weight", "eval_every"} {
		if !have[w] {
			t.Errorf("Keys lacks %q", w)
		}
	}
	if have["lora"] || have["run"] {
		t.Errorf("Keys lists sections: %v", ks)
	}
}
