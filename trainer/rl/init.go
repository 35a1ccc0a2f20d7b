package rl

// SFT → RL chaining (paper 000 §4.4, paper 001 A.3): init.adapter names a
// PEFT adapter directory (e.g. an SFT run's RUN/best), and init.merge says
// how RL starts from it:
//
//	merge: true   the adapter is merged into the base weights (W + (α/r)·B A,
//	              computed on the host in float32, stored in the base's dtype)
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
	"github.com/argrl/argrl/model/safetensors"
	"github.com/argrl/argrl/trainer/ckpt"
)

// MergeAdapter writes into out a model directory holding base's
// config.json and its weights with the PEFT adapter in adapterDir merged.
func MergeAdapter(base, adapterDir, out string) error {
	ck, err := model.Load(base)
	if err != nil {
		return fmt.Errorf("init.adapter merge: %w", err)
	}
	a, err := model.ImportPEFT(adapterDir, ck.Config)
	if err != nil {
		return fmt.Errorf("key \"init.adapter\": %w", err)
	}
	byName := model.ParamsByName(ck.Weights)
	sc := float32(a.Scale())
	for path, l := range a.Modules {
		w := byName[path+".weight"]
		if w == nil {
			return fmt.Errorf("key \"init.adapter\": %s adapts %s, which %s does not have", adapterDir, path, base)
		}
		out, in, r := w.Shape[0], w.Shape[1], a.R
		if len(l.B.Data) != out*r || len(l.A.Data) != r*in {
			return fmt.Errorf("key \"init.adapter\": %s: %s has A %v, B %v for a weight %v", adapterDir, path, l.A.Shape, l.B.Shape, w.Shape)
		}
		row := make([]float32, in)
		for o := 0; o < out; o++ { // W[o, :] += sc · Σ_k B[o, k] · A[k, :]
			for i := range row {
				row[i] = 0
			}
			for k := 0; k < r; k++ {
				b := l.B.Data[o*r+k]
				if b == 0 {
					continue
				}
				ak := l.A.Data[k*in : (k+1)*in]
				for i, x := range ak {
					row[i] += b * x
				}
			}
			wo := w.Data[o*in : (o+1)*in]
			for i := range wo {
				wo[i] += sc * row[i]
			}
		}
	}
	var ts []safetensors.Tensor
	for _, t := range ck.Weights.Params() {
		if t.DType == safetensors.BF16 {
			ts = append(ts, safetensors.FromFloat32AsBF16(t.Name, t.Shape, t.Data))
		} else {
			ts = append(ts, safetensors.FromFloat32(t.Name, t.Shape, t.Data))
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("init.adapter merge: %w", err)
	}
	if err := safetensors.WriteFile(filepath.Join(out, safetensors.SingleName), ts, map[string]string{"format": "pt"}); err != nil {
		return fmt.Errorf("init.adapter merge: %w", err)
	}
	raw, err := os.ReadFile(filepath.Join(base, "config.json"))
	if err != nil {
		return fmt.Errorf("init.adapter merge: %w", err)
	}
	if err := ckpt.WriteFileAtomic(filepath.Join(out, "config.json"), raw); err != nil {
		return fmt.Errorf("init.adapter merge: %w", err)
	}
	return nil
}
