package rollout

// Per-sample random streams, parameter checks and stop conditions.

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/argrl/argrl/kernels"
)

// Uniform is the uniform in [0, 1) that sample `sample` of the prompt with
// id `id` uses at generation step `step` (0 = its first token) under seed:
//
//	h = FNV-1a64(id)
//	z = mix(mix(mix(mix(seed ⊕ c0) ⊕ h) ⊕ sample) ⊕ step)
//	u = (z >> 40) / 2²⁴
//
// with mix the splitmix64 finalizer. A pure function: the same (seed, id,
// sample, step) gives the same u in any batch, order or process.
func Uniform(seed uint64, id string, sample, step int) float32 {
	h := uint64(14695981039346656037) // FNV-1a offset basis
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	z := mix64(seed ^ 0x726f6c6c6f7574) // "rollout"
	z = mix64(z ^ h)
	z = mix64(z ^ uint64(sample))
	z = mix64(z ^ uint64(step))
	return float32(z>>40) / (1 << 24)
}

// mix64 is splitmix64's finalizer (a bijection on uint64).
func mix64(z uint64) uint64 {
	z += 0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// check validates p against the model's vocabulary.
func (p *Params) check(V int, haveTok bool) error {
	switch {
	case p.G < 1:
		return fmt.Errorf("G = %d samples per prompt; want ≥ 1", p.G)
	case !(p.Temperature >= 0) || math.IsInf(float64(p.Temperature), 0):
		return fmt.Errorf("temperature %v; want a finite value ≥ 0", p.Temperature)
	case !(p.TopP >= 0 && p.TopP <= 1):
		return fmt.Errorf("top_p %v; want a value in (0, 1] (0 or 1: off)", p.TopP)
	case p.TopK < 0:
		return fmt.Errorf("top_k %d; want ≥ 0 (0: off)", p.TopK)
	case p.MaxNewTokens < 0:
		return fmt.Errorf("max_new_tokens %d; want ≥ 0", p.MaxNewTokens)
	case p.MaxTurns < 0:
		return fmt.Errorf("max_turns %d; want ≥ 0", p.MaxTurns)
	case len(p.Stop) > 0 && !haveTok:
		return fmt.Errorf("stop strings %q need a tokenizer", p.Stop)
	}
	for _, id := range p.StopIDs {
		if id < 0 || int(id) >= V {
			return fmt.Errorf("stop id %d outside the vocabulary [0, %d)", id, V)
		}
	}
	for _, s := range p.Stop {
		if s == "" {
			return fmt.Errorf("empty stop string")
		}
	}
	return nil
}

// kernel returns the backend's sampling parameters.
func (p *Params) kernel() kernels.SampleParams {
	sp := kernels.SampleParams{Temperature: p.Temperature, TopK: p.TopK}
	if p.TopP > 0 && p.TopP < 1 {
		sp.TopP = p.TopP
	}
	return sp
}

// stopWindow is how many trailing tokens are decoded to look for a stop
// string: every token decodes to at least one byte unless it is a skipped
// special token, so maxBytes+4 tokens cover the longest stop string plus a
// character split over tokens.
func stopWindow(maxBytes int) int { return maxBytes + 4 }

// stopped reports whether the newest token of ids ends the sample: a stop
// id, or a stop string inside the decoded tail (the earlier tails had none,
// so a match involves the newest token).
func (e *Engine) stopped(ids []int32, p *Params) bool {
	last := ids[len(ids)-1]
	if slices.Contains(p.StopIDs, last) {
		return true
	}
	if len(p.Stop) == 0 {
		return false
	}
	longest := 0
	for _, s := range p.Stop {
		longest = max(longest, len(s))
	}
	w := ids[max(0, len(ids)-stopWindow(longest)):]
	tail := e.tok.Decode(w, true)
	for _, s := range p.Stop {
		if strings.Contains(tail, s) {
			return true
		}
	}
	return false
}
