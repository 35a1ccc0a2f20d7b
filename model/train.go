package model

// The training API the SFT, GRPO and PPO trainers call. A micro-batch is a
// list of token sequences (right padded internally, or packed end to end
// with Options.Pack: layout.go); the trainer computes
// its objective on the host from per-token log-probs and hands back
// ∂loss/∂log-prob, and Step accumulates ∂loss/∂param into Param.G.

import (
	"fmt"

	"github.com/argrl/argrl/kernels/graph"
)

// Outputs are per-token results of a forward pass, indexed [b][t] for
// t < len(seqs[b]).
type Outputs struct {
	// LogProbs[b][t] = log p(seqs[b][t] | seqs[b][<t]) for t ≥ 1; [b][0] = 0.
	LogProbs [][]float32
	// Entropy[b][t] is the entropy of the distribution LogProbs[b][t] is
	// drawn from (t ≥ 1); [b][0] = 0. Output only: no gradient.
	Entropy [][]float32
	// Values[b][t] is the value head on the hidden state of position t
	// (which has seen tokens ≤ t); nil without Options.ValueHead.
	Values [][]float32
}

// Grads are the host's ∂loss/∂Outputs, same indexing. A nil Values (or a
// nil row) means zero; LogProbs[b][0] is ignored.
type Grads struct {
	LogProbs [][]float32
	Values   [][]float32
}

// Step runs forward and backward on one micro-batch: forward with dropout
// on the LoRA inputs, grad(outputs) on the host, then backward, adding
// ∂loss/∂W to each trainable Param.G (call ZeroGrad to start a new
// accumulation). Padding never contributes: a micro-batch of 8 sequences
// and 8 micro-batches of one give the same G up to float rounding (with
// dropout 0; dropout masks depend on the batch layout).
func (m *Model) Step(seqs [][]int32, grad func(*Outputs) (*Grads, error)) error {
	if len(m.trainable) == 0 {
		return fmt.Errorf("model: Step: nothing to train (open with LoRA, Adapter, FullFT or ValueHead)")
	}
	if m.Merged() {
		return fmt.Errorf("model: Step: adapters are merged; Unmerge first")
	}
	if m.lora != nil && !m.adapters {
		return fmt.Errorf("model: Step: adapters are switched off (SetAdapters(true) first)")
	}
	lay, err := m.layout(seqs)
	if err != nil {
		return fmt.Errorf("model: Step: %w", err)
	}
	mg, err := m.graphShape(lay.B, lay.T)
	if err != nil {
		return err
	}
	ex, err := m.executor(mg, true)
	if err != nil {
		return err
	}
	lay.fill(mg.b, seqs)
	mg.b.Eval = false
	mg.b.Seed = 0
	if m.lora != nil {
		mg.b.Seed = mix64(m.lora.seed ^ mix64(m.steps+1))
	}
	m.steps++
	if err := ex.Forward(); err != nil {
		return fmt.Errorf("model: Step: %w", err)
	}
	out, err := m.outputs(ex, mg, seqs, lay)
	if err != nil {
		return err
	}
	g, err := grad(out)
	if err != nil {
		return fmt.Errorf("model: Step: %w", err)
	}
	if g == nil {
		return fmt.Errorf("model: Step: grad returned nil")
	}
	dlp, err := flatGrad(g.LogProbs, seqs, lay, true, "LogProbs")
	if err != nil {
		return err
	}
	if err := ex.Set(mg.dlp, dlp); err != nil {
		return err
	}
	if mg.dval != nil {
		dv, err := flatGrad(g.Values, seqs, lay, false, "Values")
		if err != nil {
			return err
		}
		if err := ex.Set(mg.dval, dv); err != nil {
			return err
		}
	} else if g.Values != nil {
		return fmt.Errorf("model: Step: Grads.Values given but the model has no value head")
	}
	if err := ex.Backward(); err != nil {
		return fmt.Errorf("model: Step: %w", err)
	}
	for i, p := range m.trainable {
		m.be.AXPBY(p.G, p.G, ex.Buffer(mg.grads[i]), 1, 1, p.Len())
	}
	if err := m.be.Sync(); err != nil {
		return fmt.Errorf("model: Step: accumulate: %w", err)
	}
	return nil
}

// Forward runs a forward pass without dropout, with the adapters on (the
// policy) or off (the frozen reference) as adapters says, whatever the
// SetAdapters state (which it leaves unchanged). Without LoRA, adapters is
// ignored (except that FullFT has no frozen reference to switch to).
func (m *Model) Forward(seqs [][]int32, adapters bool) (*Outputs, error) {
	if !adapters && m.Merged() {
		return nil, fmt.Errorf("model: Forward: adapters are merged; Unmerge before computing the reference")
	}
	if !adapters && m.opt.FullFT {
		return nil, fmt.Errorf("model: Forward: full fine-tuning keeps no frozen copy of the base weights")
	}
	lay, err := m.layout(seqs)
	if err != nil {
		return nil, fmt.Errorf("model: Forward: %w", err)
	}
	mg, err := m.graphShape(lay.B, lay.T)
	if err != nil {
		return nil, err
	}
	ex, err := m.executor(mg, false)
	if err != nil {
		return nil, err
	}
	if m.lora != nil && !m.Merged() {
		saved := m.scale
		defer func() { m.scale = saved }()
		m.scale = 0
		if adapters {
			m.scale = m.lora.scaleValue()
		}
	}
	lay.fill(mg.b, seqs)
	mg.b.Eval = true
	if err := ex.Forward(); err != nil {
		return nil, fmt.Errorf("model: Forward: %w", err)
	}
	return m.outputs(ex, mg, seqs, lay)
}

// TrainPlan compiles the training graph of a micro-batch of B sequences
// of up to T tokens (as Step would, without running it) and returns its
// memory plan: the activation memory (graph.Stats.ActivationBytes) is
// what Options.Recompute trades for time.
func (m *Model) TrainPlan(B, T int) (graph.Stats, error) {
	if len(m.trainable) == 0 {
		return graph.Stats{}, fmt.Errorf("model: TrainPlan: nothing to train")
	}
	if B <= 0 || T <= 0 || T > m.maxLen {
		return graph.Stats{}, fmt.Errorf("model: TrainPlan: B = %d, T = %d: want B > 0 and 0 < T ≤ MaxLen %d", B, T, m.maxLen)
	}
	tb := m.opt.TBucket
	mg, err := m.graphShape(B, min((T+tb-1)/tb*tb, m.maxLen))
	if err != nil {
		return graph.Stats{}, err
	}
	ex, err := m.executor(mg, true)
	if err != nil {
		return graph.Stats{}, err
	}
	return ex.Stats(), nil
}

// LogProbs is Forward(seqs, adapters).LogProbs.
func (m *Model) LogProbs(seqs [][]int32, adapters bool) ([][]float32, error) {
	o, err := m.Forward(seqs, adapters)
	if err != nil {
		return nil, err
	}
	return o.LogProbs, nil
}

// mix64 is the splitmix64 finalizer.
func mix64(z uint64) uint64 {
	z += 0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}
