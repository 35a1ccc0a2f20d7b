package config

import (
	"os"
	"path/filepath"
	"reflect"
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
		{"key twice", "kl:\n  coef: 0.1\n  estimator: k1\n  coef: 0.2\n", nil, []string{"c.yaml:4", `"kl.coef"`, "twice", "line 2"}},
		{"section twice", "lora: {r: 8}\nalgo: sft\nlora: {alpha: 4}\n", nil, []string{"c.yaml:3", `"lora"`, "twice", "line 1"}},
		{"top key twice", "eval_every: 5\neval_every: 6\n", nil, []string{"c.yaml:2", `"eval_every"`, "twice"}},
		{"key twice in a flow map", "optim: {lr: 0.1, lr: 0.2}\n", nil, []string{"c.yaml:1", `"optim.lr"`, "twice"}},
		{"unknown lora target", "lora:\n  targets: [q, qkv]\n", nil, []string{`"lora.targets"`, `"qkv"`}},
		{"no lora targets", "lora:\n  targets: []\n", nil, []string{`"lora.targets"`, "empty"}},
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

// Without a file, ARGRL_ variables or --set, viper's layers give back
// Default() exactly (nil lists and pointers included).
func TestConfigDefaultsRoundTrip(t *testing.T) {
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := Default(); !reflect.DeepEqual(c, d) {
		t.Fatalf("Load(\"\", nil) = %+v, want Default() = %+v", c, d)
	}
}

// Each source decodes by the key's type: YAML for lists, numbers, bools
// and pointers, verbatim for strings; a section takes a mapping; a null
// leaves a scalar to the sources below and clears a list.
func TestConfigSourcesDecode(t *testing.T) {
	p := writeCfg(t, "lora:\n  r: null\n  targets: null\n  enabled: no\nrollout:\n  stop: [\"</s>\"]\n")
	t.Setenv("ARGRL_ROLLOUT_STOP", "[\"\\n\\n\", END]")
	t.Setenv("ARGRL_REWARD_JUDGE_HTTP_RETRIES", "2") // judge_http embeds its client's keys inline
	t.Setenv("ARGRL_MODEL_SYSTEM", "You call tools: # always")
	t.Setenv("ARGRL_KL_COEF", "") // empty: unset
	c, err := Load(p, []string{"kl={estimator: k1}", "reward.judge_http.url=http://localhost:8000/v1", "data.val_max=7", "run.dir="})
	if err != nil {
		t.Fatal(err)
	}
	d := Default()
	if c.LoRA.R != d.LoRA.R || c.LoRA.Targets != nil || c.LoRA.Enabled {
		t.Errorf("file nulls and bools: r %d, targets %v, enabled %v", c.LoRA.R, c.LoRA.Targets, c.LoRA.Enabled)
	}
	if len(c.Rollout.Stop) != 2 || c.Rollout.Stop[0] != "\n\n" || c.Rollout.Stop[1] != "END" {
		t.Errorf("env list: %q", c.Rollout.Stop)
	}
	if r := c.Reward.JudgeHTTP.Retries; r == nil || *r != 2 || c.Reward.JudgeHTTP.URL != "http://localhost:8000/v1" {
		t.Errorf("inline keys: retries %v, url %q", r, c.Reward.JudgeHTTP.URL)
	}
	if c.Model.System != "You call tools: # always" {
		t.Errorf("env string: %q", c.Model.System)
	}
	if c.KL.Estimator != "k1" || c.KL.Coef != d.KL.Coef {
		t.Errorf("--set section: %+v", c.KL)
	}
	if c.Data.ValMax != 7 || c.Run.Dir != "" {
		t.Errorf("--set leaves: val_max %d, run.dir %q", c.Data.ValMax, c.Run.Dir)
	}
	t.Setenv("ARGRL_LORA_R", "many")
	if _, err := Load(p, nil); err == nil || !strings.Contains(err.Error(), "ARGRL_LORA_R") || !strings.Contains(err.Error(), `"lora.r"`) {
		t.Errorf("ill-typed ARGRL_LORA_R: %v", err)
	}
	t.Setenv("ARGRL_LORA_R", "4")
	if _, err := Load(p, []string{"kl={coef: 1, estimatr: k1}"}); err == nil || !strings.Contains(err.Error(), `"kl.estimatr"`) || !strings.Contains(err.Error(), "--set kl") {
		t.Errorf("unknown key in a --set mapping: %v", err)
	}
}

// The objective's variants (docs/contracts.md §5): defaults that leave
// GRPO as it was, and errors that name the key.
func TestAlgorithmKeys(t *testing.T) {
	d := Default()
	if d.IsLevel != "token" || d.Adv.Estimator != "grpo" || d.Adv.PerPart || d.DynamicSampling.Enabled ||
		d.DynamicSampling.MaxBatches != 4 || d.Overlong.Mode != "none" || d.TIS.Cap != 0 {
		t.Errorf("defaults: is_level %q, adv %+v, dynamic_sampling %+v, overlong %+v, tis %+v", d.IsLevel, d.Adv, d.DynamicSampling, d.Overlong, d.TIS)
	}
	c, err := Load("", []string{"algo=grpo", "is_level=sequence", "adv.estimator=rloo", "dynamic_sampling.enabled=true",
		"dynamic_sampling.max_batches=3", "overlong.mode=penalty", "overlong.buffer=32", "overlong.penalty=0.5", "tis.cap=2"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ValidateRL(); err != nil {
		t.Fatal(err)
	}
	if c.IsLevel != "sequence" || c.Adv.Estimator != "rloo" || c.DynamicSampling.MaxBatches != 3 || c.Overlong.Buffer != 32 || c.TIS.Cap != 2 {
		t.Errorf("not applied: %+v", c)
	}
	for _, k := range []struct {
		sets []string
		want string
	}{
		{[]string{"is_level=seq"}, `key "is_level": "seq" is not one of token, sequence`},
		{[]string{"adv.estimator=ppo"}, `key "adv.estimator": "ppo" is not one of grpo, rloo, reinforce++`},
		{[]string{"overlong.mode=cut"}, `key "overlong.mode": "cut" is not one of none, filter, penalty`},
	} {
		if _, err := Load("", append([]string{"algo=grpo"}, k.sets...)); err == nil || !strings.Contains(err.Error(), k.want) {
			t.Errorf("%v: %v, want %q", k.sets, err, k.want)
		}
	}
	for _, k := range []struct {
		sets []string
		want string
	}{
		{[]string{"algo=ppo", "adv.estimator=rloo"}, `"adv.estimator": rloo replaces GRPO's group baseline`},
		{[]string{"algo=ppo", "dynamic_sampling.enabled=true"}, `"dynamic_sampling.enabled" drops groups`},
		{[]string{"algo=grpo", "rollout.g=1", "dynamic_sampling.enabled=true"}, `"dynamic_sampling.enabled" drops groups`},
		{[]string{"algo=grpo", "rollout.g=1", "adv.estimator=rloo"}, `rloo's leave-one-out baseline needs rollout.g ≥ 2`},
		{[]string{"algo=grpo", "adv.per_part=true", "adv.estimator=reinforce++"}, `"adv.per_part" normalizes within GRPO's groups`},
		{[]string{"algo=grpo", "dynamic_sampling.max_batches=0"}, `"dynamic_sampling.max_batches": must be ≥ 1`},
		{[]string{"algo=grpo", "overlong.mode=penalty", "overlong.buffer=600"}, `"overlong.buffer": must be in [1, rollout.max_new_tokens = 512]`},
		{[]string{"algo=grpo", "overlong.mode=penalty", "overlong.penalty=-1"}, `"overlong.penalty": must be ≥ 0`},
		{[]string{"algo=grpo", "tis.cap=0.5"}, `"tis.cap": must be 0 (off) or ≥ 1`},
	} {
		c, err := Load("", k.sets)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.ValidateRL(); err == nil || !strings.Contains(err.Error(), k.want) {
			t.Errorf("%v: %v, want %q", k.sets, err, k.want)
		}
	}
}

// Multi-turn rollouts (rollout.max_turns, rollout.env, rollout.max_env_tokens,
// reward.trajectory): defaults that keep one turn, values applied, and
// errors that name the key.
func TestMultiTurnKeys(t *testing.T) {
	d := Default()
	if d.Rollout.MaxTurns != 1 || d.Rollout.Env.Name != "synth" || d.Rollout.MaxEnvTokens != 512 ||
		d.Reward.Trajectory.TurnWeight != 1 || d.Reward.Trajectory.StateWeight != 1 {
		t.Errorf("defaults: rollout %+v, reward.trajectory %+v", d.Rollout, d.Reward.Trajectory)
	}
	c, err := Load("", []string{"algo=grpo", "rollout.max_turns=4", "rollout.max_env_tokens=128", "rollout.env.name=http",
		"rollout.env.url=http://localhost:9/step", "rollout.env.timeout_s=2.5", "reward.trajectory.state_weight=0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ValidateRL(); err != nil {
		t.Fatal(err)
	}
	if c.Rollout.MaxTurns != 4 || c.Rollout.MaxEnvTokens != 128 || c.Rollout.Env.URL != "http://localhost:9/step" ||
		c.Rollout.Env.TimeoutS != 2.5 || c.Reward.Trajectory.StateWeight != 0 {
		t.Errorf("not applied: rollout %+v, trajectory %+v", c.Rollout, c.Reward.Trajectory)
	}
	for _, k := range []struct {
		sets []string
		want string
	}{
		{[]string{"rollout.max_turns=0"}, `"rollout.max_turns" (1: one turn) and "rollout.max_env_tokens" must be ≥ 1, got 0 and 512`},
		{[]string{"rollout.max_env_tokens=0"}, `must be ≥ 1, got 1 and 0`},
		{[]string{"rollout.env.name=gym"}, `key "rollout.env.name": "gym" is not one of synth, bfcl, http`},
	} {
		if _, err := Load("", append([]string{"algo=grpo"}, k.sets...)); err == nil || !strings.Contains(err.Error(), k.want) {
			t.Errorf("%v: %v, want %q", k.sets, err, k.want)
		}
	}
	for _, k := range []struct {
		sets []string
		want string
	}{
		{[]string{"reward.trajectory.turn_weight=-1"}, `"reward.trajectory.turn_weight" and "reward.trajectory.state_weight": must be ≥ 0 and not both 0, got -1 and 1`},
		{[]string{"reward.trajectory.turn_weight=0", "reward.trajectory.state_weight=0"}, `not both 0, got 0 and 0`},
		{[]string{"rollout.max_turns=3", "rollout.env.name=http"}, `key "rollout.env": env: http: url "" is not an http(s) URL`},
		{[]string{"rollout.max_turns=3", "rollout.env.name=http", "rollout.env.url=http://h/x", "rollout.env.timeout_s=-1"}, `timeout_s -1 is negative`},
		{[]string{"rollout.max_turns=3", "overlong.mode=filter"}, `"overlong.mode": filter acts on one response`},
	} {
		c, err := Load("", append([]string{"algo=grpo"}, k.sets...))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.ValidateRL(); err == nil || !strings.Contains(err.Error(), k.want) {
			t.Errorf("%v: %v, want %q", k.sets, err, k.want)
		}
	}
	// One turn: the environment is not used, so an http one needs no URL.
	c, _ = Load("", []string{"algo=grpo", "rollout.env.name=http"})
	if err := c.ValidateRL(); err != nil {
		t.Errorf("single-turn with rollout.env.name http: %v", err)
	}
}
