package trainer

import (
	"fmt"

	"github.com/argrl/argrl/trainer/config"
)

// The best-checkpoint rule (issue 36): RUN/best is chosen by
// checkpoint.best_metric on the greedy validation responses (Evaluate: the
// rollout engine's greedy decoding, as `train eval` generates the test
// responses), and on at least checkpoint.best_min_val records, so that a
// best checkpoint is not an early step that won on a handful of records.
// At 40 records a one-record difference is 2.5 points of FCM; at 200 it is
// 0.5. best_min_val is 0 (no floor) by default; make reproduce and make
// reproduce-r2if set 200.

// bestRecords is the number of validation records each evaluation scores:
// the validation file's, capped by data.val_max.
func bestRecords(val *Dataset, valMax int) int {
	if val == nil {
		return 0
	}
	n := len(val.Examples)
	if valMax > 0 && valMax < n {
		n = valMax
	}
	return n
}

// checkBestRule refuses, before training, a run whose best checkpoint would
// be chosen on fewer than checkpoint.best_min_val validation records.
// Without validation (no data.val, or no evaluation) there is no best
// checkpoint and nothing to check.
func checkBestRule(cfg config.Config, val *Dataset) error {
	min := cfg.Checkpoint.BestMinVal
	if min <= 0 || val == nil || cfg.Checkpoint.BestMetric == "" {
		return nil
	}
	if n := bestRecords(val, cfg.Data.ValMax); n < min {
		return fmt.Errorf("key \"checkpoint.best_min_val\": the best checkpoint would be chosen on %d validation records (data.val %s, data.val_max %d), fewer than %d: give a larger validation file or lower the key", n, val.Path, cfg.Data.ValMax, min)
	}
	return nil
}
