package trainer

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/argrl/argrl/data/synth"
)

// Learning over several turns: GRPO on 64 dialogues of the multi-turn
// synthetic benchmark (train data synth --multi-turn --max-distractors 1
// --seed 2), from the demo's base model (configs/grpo-multiturn-tiny.yaml:
// up to 4 turns, the trajectory reward over RM-3, β = 3), 30 steps of 4
// prompts × 8 episodes at lr 2e-3, fixed seeds. The mean reward of the
// last 10 steps exceeds that of the first 10 by at least
// multiTurnMargin. Minutes on CPU: `make test-long` (ARGRL_LONG=1).
const multiTurnMargin = 0.1

func TestLongMultiTurnLearns(t *testing.T) {
	if os.Getenv("ARGRL_LONG") == "" || testing.Short() {
		t.Skip("long learning test: ARGRL_LONG=1 (make test-long)")
	}
	dir := t.TempDir()
	sc := synth.DefaultConfig()
	sc.Seed, sc.Train, sc.Val, sc.Test, sc.MaxDistractors = 2, 64, 0, 0, 1
	d, err := synth.GenerateDialogues(sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	cfg := tinyShipped(t, "grpo-multiturn-tiny", "eval_every=0", "checkpoint.every=0", "optim.batch_size=4",
		"optim.max_steps=30", "optim.lr=2e-3", "rollout.g=8")
	cfg.Data.Train, cfg.Data.Val = filepath.Join(dir, "train.jsonl"), ""
	t0 := time.Now()
	var log bytes.Buffer
	res, err := GRPO(context.Background(), cfg, RLOptions{Log: &log}) // reward.name, not runRL's letters
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	r := res.Rewards
	if len(r) != cfg.Optim.MaxSteps {
		t.Fatalf("%d steps logged", len(r))
	}
	ms := trainMetrics(t, cfg.Run.Dir)
	var turns, state, exact [2]float64
	for i, m := range ms {
		k := 0
		if i >= len(ms)-10 {
			k = 1
		} else if i >= 10 {
			continue
		}
		turns[k] += m["turns_mean"] / 10
		state[k] += m["reward_state"] / 10
		exact[k] += m["reward_exact_turns"] / 10
	}
	first, last := mean(r[:10]), mean(r[len(r)-10:])
	t.Logf("mean reward first 10 steps %.3f, last 10 %.3f; turns %.2f → %.2f, state %.3f → %.3f, exact turns %.2f → %.2f (%d steps, %s)",
		first, last, turns[0], turns[1], state[0], state[1], exact[0], exact[1], len(r), time.Since(t0).Round(time.Second))
	if !(last >= first+multiTurnMargin) {
		t.Errorf("multi-turn GRPO did not learn: %.3f → %.3f (want +%.2f); rewards %v", first, last, multiTurnMargin, r)
	}
}
