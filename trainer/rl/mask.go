package rl

// Multi-turn masks (Rollout.Mask): a rollout of several assistant turns
// holds, between the turns, the tokens the environment's answers and the
// chat template added. Per-token quantities that only exist where the
// policy acted (PPO's GAE, its whitening, β's weights) are computed on the
// sampled tokens alone, packed, and then put back in place.

// SampledCount is the number of true entries of mask, or n when mask is
// nil (every token sampled).
func SampledCount(mask []bool, n int) int {
	if mask == nil {
		return n
	}
	c := 0
	for _, m := range mask {
		if m {
			c++
		}
	}
	return c
}

// Pack returns the values of x at the sampled tokens, in order: x itself
// when mask is nil.
func Pack(x []float32, mask []bool) []float32 {
	if mask == nil {
		return x
	}
	out := make([]float32, 0, len(x))
	for k, v := range x {
		if mask[k] {
			out = append(out, v)
		}
	}
	return out
}

// Unpack is Pack's inverse: packed's values back at the sampled positions
// of mask, 0 elsewhere; packed itself when mask is nil.
func Unpack(packed []float32, mask []bool) []float32 {
	if mask == nil {
		return packed
	}
	out := make([]float32, len(mask))
	j := 0
	for k, m := range mask {
		if m {
			out[k] = packed[j]
			j++
		}
	}
	return out
}
