package rl

// SFT → RL chaining (paper 000 §4.4, paper 001 A.3): init.adapter names a
// PEFT adapter directory (e.g. an SFT run's RUN/best), and init.merge says
// how RL starts from it:
//
//	merge: true   the adapter is merged into the base weights (W + (α/r)·B A,
//	              computed on the host in float32, row by row, stored in the
//	              base's dtype)
//	              and RL trains fresh LoRA adapters on the merged model; the
//	              reference is the merged model with LoRA off, i.e. the SFT
//	              model. As paper 001 does for its larger models.
//	merge: false  the adapter itself is the trainable LoRA (its r and targets
//	              must match lora.*); the reference is a host snapshot of it
//	              as loaded (ref.go), again the SFT model.
//
// The merged weights are written to a temporary model directory that is
// removed once the model is on the backend (as model.init: random does), so
// a resumed run rebuilds the same merged base from the same files.

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/argrl/argrl/model"
)

// MergeAdapter writes into out a model directory holding base's
// config.json and its weights with the PEFT adapter in adapterDir merged,
// each tensor in the base's dtype (model.Export, one row at a time).
func MergeAdapter(base, adapterDir, out string) error {
	if _, err := os.Stat(filepath.Join(adapterDir, model.AdapterConfigName)); err != nil {
		return fmt.Errorf("key \"init.adapter\": %w", err)
	}
	if _, err := model.Export(base, out, model.ExportOptions{Adapter: adapterDir}); err != nil {
		return fmt.Errorf("init.adapter merge: %w", err)
	}
	return nil
}
