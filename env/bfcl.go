package env

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/internal/bfclsim"
)

// BFCL runs the records the BFCL multi-turn importer writes, for the
// classes argrl simulates (internal/bfclsim: MathAPI). The record's env
// is {"name": "bfcl", "config": {"involved_classes": [...],
// "initial_config": {...}}}; only the record's tools may be called.
type BFCL struct{}

// Name returns "bfcl".
func (BFCL) Name() string { return "bfcl" }

// Open starts an episode of the record's classes.
func (BFCL) Open(_ context.Context, rec *data.Record, _ string) (Session, error) {
	if rec.Env == nil || rec.Env.Name != "bfcl" {
		return nil, fmt.Errorf("not a BFCL multi-turn record (env.name must be bfcl)")
	}
	var cfg struct {
		Classes []string `json:"involved_classes"`
	}
	if err := json.Unmarshal(rec.Env.Config, &cfg); err != nil || len(cfg.Classes) == 0 {
		return nil, fmt.Errorf("env.config needs involved_classes, a non-empty list of class names")
	}
	w, err := bfclsim.New(cfg.Classes)
	if err != nil {
		return nil, err
	}
	return &toolSession{call: w.Call, state: w.State, tools: offered(rec)}, nil
}
