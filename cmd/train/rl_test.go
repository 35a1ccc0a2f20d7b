package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/argrl/argrl/trainer/metrics"
)

// tinyRLArgs runs configs/<name>.yaml for steps steps in run, with the
// repository-root paths of the tiny config made relative to cmd/train.
func tinyRLArgs(algo, name, run string, steps string, extra ...string) []string {
	td := "../../trainer/testdata/sft"
	args := []string{algo, "--config", "../../configs/" + name + ".yaml",
		"--set", "run.dir=" + run, "--set", "model.path=" + td + "/tiny",
		"--set", "data.train=" + td + "/train.jsonl", "--set", "data.val=" + td + "/val.jsonl",
		"--set", "optim.max_steps=" + steps, "--set", "eval_every=2", "--set", "checkpoint.every=1"}
	return append(args, extra...)
}

// `train grpo` and `train ppo` run the tiny configs, write a checkpoint
// per step, and continue with --resume.
func TestTrainRLTiny(t *testing.T) {
	for _, c := range []struct{ algo, cfg string }{{"grpo", "grpo-tiny"}, {"ppo", "ppo-tiny"}} {
		run := filepath.Join(t.TempDir(), "run")
		_, stderr, code := runTrain(t, tinyRLArgs(c.algo, c.cfg, run, "2")...)
		if code != 0 || !strings.Contains(stderr, c.algo+": done: 2 steps") {
			t.Fatalf("train %s: exit %d\n%s", c.algo, code, stderr)
		}
		_, stderr, code = runTrain(t, append(tinyRLArgs(c.algo, c.cfg, run, "3"), "--resume")...)
		if code != 0 || !strings.Contains(stderr, "resuming from") || !strings.Contains(stderr, "done: 3 steps") {
			t.Fatalf("train %s --resume: exit %d\n%s", c.algo, code, stderr)
		}
		// The longer run changes the config hash and the schedule: the key
		// is named, the schedule field by field.
		if !strings.Contains(stderr, "changed since its config.yaml and config.history: optim.max_steps: 2 → 3 (--set optim.max_steps);") {
			t.Errorf("train %s --resume: config hash warning:\n%s", c.algo, stderr)
		}
		if !strings.Contains(stderr, "learning-rate schedule changed since step-000002: total_steps 2 → 3") || strings.Contains(stderr, "{Kind:") {
			t.Errorf("train %s --resume: schedule warning:\n%s", c.algo, stderr)
		}
		// Resumed once more with its own config (no --config): nothing
		// left to train, and the last checkpoint is named.
		_, stderr, code = runTrain(t, c.algo, "--resume", "--set", "run.dir="+run)
		if code != 0 || !strings.Contains(stderr, "nothing left to train; its last checkpoint is "+filepath.Join(run, "checkpoints", "step-000003")) {
			t.Errorf("train %s --resume of a finished run: exit %d\n%s", c.algo, code, stderr)
		}
	}
}

// Bad RL keys fail before any work, naming the source (here the --set
// flag, not the file), the key and the valid choices.
func TestTrainRLConfigErrors(t *testing.T) {
	for _, c := range []struct {
		set  string
		want []string
	}{
		{"reward.name=rm4", []string{`--set reward.name: key "reward.name": "rm4" is not one of rm1, rm2, rm3, decomposed, binary, r2if`}},
		{"token_weight.beta=0", []string{`key "token_weight.beta": must be > 0, got 0`}},
		{"token_weight.beta=-3", []string{`key "token_weight.beta": must be > 0, got -3`}},
		{"kl.estimator=k4", []string{`key "kl.estimator": "k4" is not one of k1, k2, k3`}},
		{"loss_agg=mean", []string{`key "loss_agg": "mean" is not one of token-mean, seq-mean-token-mean, seq-mean-token-sum-norm`}},
		{"ppo.gamma=1.5", []string{`--set ppo.gamma: key "ppo.gamma": must be in [0,1], got 1.5`}},
	} {
		_, stderr, code := runTrain(t, "grpo", "--config", "../../configs/grpo-rm3.yaml", "--set", c.set)
		if code == 0 {
			t.Fatalf("--set %s: exit 0", c.set)
		}
		if strings.Contains(stderr, "grpo-rm3.yaml") { // a bad --set value is the flag's, not the file's
			t.Errorf("--set %s: blamed on the file: %s", c.set, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("--set %s: stderr %q lacks %q", c.set, stderr, w)
			}
		}
	}
}

// Multi-turn rollouts as shipped: `train grpo --config
// configs/grpo-multiturn-tiny.yaml` for two steps, from the repository
// root as the config says. Every step's episodes take more than one turn
// on average (turns_mean > 1), and the run validates with greedy episodes.
func TestTrainGRPOMultiTurn(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	cmd := trainCmd(t, "grpo", "--config", "configs/grpo-multiturn-tiny.yaml", "--set", "run.dir="+run, "--set", "optim.max_steps=2")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "grpo: done: 2 steps") || !strings.Contains(string(out), "multi-turn rollouts") {
		t.Fatalf("train grpo: %v\n%s", err, out)
	}
	recs, err := metrics.Read(filepath.Join(run, metrics.File))
	if err != nil {
		t.Fatal(err)
	}
	var train, eval int
	for _, r := range recs {
		switch r.Kind {
		case "train":
			train++
			if tm := r.Values["turns_mean"]; !(tm > 1) {
				t.Errorf("step %d: turns_mean %v, want > 1", r.Step, tm)
			}
		case "eval":
			eval++
			if _, ok := r.Values["turns_mean"]; !ok {
				t.Errorf("eval step %d: no turns_mean: %v", r.Step, r.Values)
			}
		}
	}
	if train != 2 || eval != 1 {
		t.Errorf("%d train and %d eval lines, want 2 and 1\n%s", train, eval, out)
	}
}
