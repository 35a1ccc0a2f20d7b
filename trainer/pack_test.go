package trainer

import (
	"encoding/json"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/metrics"
	"github.com/argrl/argrl/trainer/ranks"
)

// Packing (data.packing) and token-budget micro-batches (optim.micro_tokens)
// against the runs of the commit before them: testdata/today_metrics.json
// holds the non-timing training metrics of SFT (3 steps), GRPO and PPO
// (2 steps each) on the tiny configs below, written by that commit
// (f0bb46a, padded rows; every float64 as encoding/json round-trips it).

func todayRuns(t *testing.T, edit func(*config.Config)) map[string][]metrics.Metrics {
	t.Helper()
	sft := tinyConfig(t.TempDir())
	sft.Data.Val, sft.EvalEvery, sft.Optim.MaxSteps = "", 0, 3
	grpo := rlTinyConfig(t.TempDir(), "grpo")
	grpo.Optim.MaxSteps = 2
	ppo := rlTinyConfig(t.TempDir(), "ppo")
	ppo.Optim.MaxSteps = 2
	out := map[string][]metrics.Metrics{}
	for name, cfg := range map[string]config.Config{"sft": sft, "grpo": grpo, "ppo": ppo} {
		cfg.Model.Compute = "f32" // the commit before packing computed in f32 (model.compute: auto came later)
		edit(&cfg)
		if name == "sft" {
			runSFT(t, cfg, false, nil)
		} else {
			runRL(t, cfg, RLOptions{})
		}
		for _, m := range trainMetrics(t, cfg.Run.Dir) {
			for k := range m {
				if isTiming(k) {
					delete(m, k)
				}
			}
			out[name] = append(out[name], m)
		}
	}
	return out
}

func readToday(t *testing.T) map[string][]metrics.Metrics {
	t.Helper()
	raw, err := os.ReadFile("testdata/today_metrics.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string][]metrics.Metrics
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	return want
}

// compareRuns calls diff(recipe, step, key, got, want) for every metric
// of want, failing on a missing step or key.
func compareRuns(t *testing.T, got, want map[string][]metrics.Metrics, diff func(recipe string, step int, k string, g, w float64)) {
	t.Helper()
	for name, ws := range want {
		if len(got[name]) != len(ws) {
			t.Fatalf("%s: %d steps, want %d", name, len(got[name]), len(ws))
		}
		for i, w := range ws {
			keys := make([]string, 0, len(w))
			for k := range w {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				g, ok := got[name][i][k]
				if !ok {
					t.Errorf("%s step %d: %s not logged", name, i+1, k)
					continue
				}
				diff(name, i+1, k, g, w[k])
			}
		}
	}
}

// TestPackingOffIsToday: data.packing false gives the metrics of the
// commit before packing bit for bit (SFT, GRPO, PPO).
func TestPackingOffIsToday(t *testing.T) {
	got := todayRuns(t, func(c *config.Config) { c.Data.Packing = false })
	compareRuns(t, got, readToday(t), func(r string, s int, k string, g, w float64) {
		if math.Float64bits(g) != math.Float64bits(w) {
			t.Errorf("%s step %d %s: %v with packing off, %v before packing", r, s, k, g, w)
		}
	})
}

// TestPackedRunsMatchToday: packed (the default), alone and with a token
// budget, the runs start as the padded ones did: the first SFT step's
// loss and the first RL step's rollouts and rewards are the same bits
// (the forward is; LoRA dropout draws other masks in another layout, so
// later steps differ), ρ − 1 = 0 at every first mini-batch.
func TestPackedRunsMatchToday(t *testing.T) {
	want := readToday(t)
	for _, budget := range []int{0, 512} {
		got := todayRuns(t, func(c *config.Config) { c.Optim.MicroTokens = budget })
		checked := 0
		compareRuns(t, got, want, func(r string, s int, k string, g, w float64) {
			exact := (s == 1 && ((r == "sft" && k == "loss") || strings.HasPrefix(k, "reward") || strings.HasPrefix(k, "rate_"))) ||
				k == "ratio_dev_first" || k == "resp_len" || k == "lr" || k == "epoch"
			if exact {
				checked++
				if math.Float64bits(g) != math.Float64bits(w) {
					t.Errorf("micro_tokens %d: %s step %d %s: %v packed, %v padded", budget, r, s, k, g, w)
				}
			}
		})
		if checked < 20 {
			t.Fatalf("only %d exact metrics compared", checked)
		}
	}
}

// TestPackedRunsMatchPadded: without dropout, packed runs (alone and with
// a token budget, which cuts the steps into other micro-batches) follow
// the padded run within float32 rounding, every metric (SFT 3 steps, GRPO
// and PPO 2).
func TestPackedRunsMatchPadded(t *testing.T) {
	noDrop := func(pack bool, budget int) func(*config.Config) {
		return func(c *config.Config) {
			c.LoRA.Dropout, c.Data.Packing, c.Optim.MicroTokens = 0, pack, budget
		}
	}
	want := todayRuns(t, noDrop(false, 0))
	for _, budget := range []int{0, 512} {
		got := todayRuns(t, noDrop(true, budget))
		var worst float64
		compareRuns(t, got, want, func(r string, s int, k string, g, w float64) {
			d := math.Abs(g-w) / math.Max(math.Abs(w), 1e-3)
			worst = math.Max(worst, d)
			if d > 1e-4 {
				t.Errorf("micro_tokens %d: %s step %d %s: %v packed, %v padded (relative %.2g)", budget, r, s, k, g, w, d)
			}
		})
		t.Logf("micro_tokens %d: worst relative difference from the padded run %.2g", budget, worst)
	}
}

// TestTokenBudgetResumeBitIdentical: GRPO packed with a token budget
// dealt over two shares, straight 4 steps = 2 steps (a kill after a
// checkpoint) + --resume, byte for byte.
func TestTokenBudgetResumeBitIdentical(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	ca, cb := rlTinyConfig(a, "grpo"), rlTinyConfig(b, "grpo")
	for _, c := range []*config.Config{&ca, &cb} {
		c.Optim.MaxSteps, c.Optim.MicroTokens, c.Dist.Shares = 4, 512, 2
	}
	runRL(t, ca, RLOptions{})
	runRL(t, cb, RLOptions{StopAfter: 2})
	runRL(t, cb, RLOptions{Resume: true})
	sameRun(t, a, b, 4, false)
	for i, m := range trainMetrics(t, a) {
		if m["ratio_dev_first"] != 0 {
			t.Errorf("step %d: ratio_dev_first %v, want 0", i+1, m["ratio_dev_first"])
		}
	}
}

// TestTokenBudgetMemoryError: a token budget whose graph cannot fit in
// the free memory is refused before training, naming the key.
func TestTokenBudgetMemoryError(t *testing.T) {
	cfg := tinyConfig(t.TempDir())
	cfg.Data.Val = ""
	cfg.Optim.MicroTokens = 1 << 30
	_, err := SFT(t.Context(), cfg, SFTOptions{Log: io.Discard})
	if err == nil || !strings.Contains(err.Error(), `key "optim.micro_tokens"`) || !strings.Contains(err.Error(), "GiB") {
		t.Fatalf("err = %v, want the micro_tokens memory error", err)
	}
	t.Log(err)
}

// TestValLossByTokens: the validation loss with its micro-batches cut by
// optim.micro_tokens is the value cut by rows, bit for bit (CPU, packed),
// on one share and on two (dist.shares: 2).
func TestValLossByTokens(t *testing.T) {
	for _, shares := range []int{1, 2} {
		team, err := ranks.New(nil, shares)
		if err != nil {
			t.Fatal(err)
		}
		cfg := tinyConfig(t.TempDir())
		s, err := NewSetup(cfg, SetupOptions{Ranks: team})
		if err != nil {
			t.Fatal(err)
		}
		exs := s.Val.Examples
		lens := make([]int, len(exs))
		for i, ex := range exs {
			lens[i] = len(ex.IDs)
		}
		rows, err := s.ValLoss(exs)
		if err != nil {
			t.Fatal(err)
		}
		budget := 2 * cfg.Model.MaxLen
		team.UseTokens(budget, s.Model.GraphTokens)
		dealt := team.Deal(len(exs), cfg.Optim.BatchSize)
		if nt, nr := len(team.Batches(dealt, cfg.Optim.BatchSize, lens)), len(team.Batches(dealt, cfg.Optim.BatchSize, nil)); nt == nr {
			t.Fatalf("shares %d: %d micro-batches by tokens, as many as by rows: the cut is not exercised", shares, nt)
		}
		tokens, err := s.ValLoss(exs)
		if err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(tokens) != math.Float64bits(rows) || rows == 0 {
			t.Errorf("shares %d: validation loss %v cut by tokens (budget %d), %v by rows", shares, tokens, budget, rows)
		}
		s.Close()
	}
}
