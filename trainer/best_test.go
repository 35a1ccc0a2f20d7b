package trainer

import (
	"strings"
	"testing"

	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/metrics"
)

func valSet(n int) *Dataset {
	return &Dataset{Path: "val.jsonl", Examples: make([]Example, n), Records: n}
}

// checkpoint.best_min_val: the records an evaluation scores (the file's,
// capped by data.val_max) must reach the floor, or the run is refused.
func TestBestRuleFloor(t *testing.T) {
	cfg := config.Default()
	cfg.Checkpoint.BestMetric, cfg.Checkpoint.BestMinVal = "fcm", 200
	for _, c := range []struct {
		n, valMax int
		ok        bool
	}{
		{40, 0, false},    // make reproduce's old validation set
		{199, 0, false},   // one short
		{200, 0, true},    // exactly the floor
		{500, 0, true},    // the whole file
		{500, 199, false}, // val_max cuts below the floor
		{500, 200, true},
		{150, 300, false}, // val_max above the file's size does not add records
	} {
		cfg.Data.ValMax = c.valMax
		err := checkBestRule(cfg, valSet(c.n))
		if (err == nil) != c.ok {
			t.Errorf("%d records, val_max %d: err %v, want ok=%v", c.n, c.valMax, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "checkpoint.best_min_val") {
			t.Errorf("the error does not name the key: %v", err)
		}
	}
	// No floor, no validation or no best metric: nothing to refuse.
	if err := checkBestRule(cfg, nil); err != nil {
		t.Errorf("no validation: %v", err)
	}
	cfg.Checkpoint.BestMinVal = 0
	if err := checkBestRule(cfg, valSet(3)); err != nil {
		t.Errorf("best_min_val 0: %v", err)
	}
	cfg.Checkpoint.BestMinVal, cfg.Checkpoint.BestMetric = 200, ""
	if err := checkBestRule(cfg, valSet(3)); err != nil {
		t.Errorf("no best metric: %v", err)
	}
	cfg = config.Default()
	cfg.Checkpoint.BestMinVal = -1
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "checkpoint.best_min_val") {
		t.Errorf("best_min_val -1: Validate says %v", err)
	}
}

// The selection itself: the highest best_metric wins, a tie keeps the
// earlier step, a missing or non-finite value never wins.
func TestBestSelection(t *testing.T) {
	r := &Run{Config: config.Default()}
	r.Config.Checkpoint.BestMetric = "exact_match"
	steps := []struct {
		v    float64
		key  string
		want bool
	}{{0.40, "exact_match", true}, {0.55, "exact_match", true}, {0.55, "exact_match", false},
		{0.50, "exact_match", false}, {0.90, "fcm", false}, {0.60, "exact_match", true}}
	for i, s := range steps {
		if got := r.Improved(10*(i+1), metrics.Metrics{s.key: s.v}); got != s.want {
			t.Errorf("step %d (%s %.2f): improved %v, want %v", 10*(i+1), s.key, s.v, got, s.want)
		}
	}
	if r.bestStep != 60 || *r.Best() != 0.60 {
		t.Errorf("best step %d value %v, want 60 and 0.60", r.bestStep, *r.Best())
	}
}
