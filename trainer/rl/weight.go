package rl

// β token weighting (paper 000 §4.3, docs/contracts.md §5): Â_{i,t} = w_t·A_i with
//
//	w_t = β  if token t overlaps the byte span of an argument value
//	w_t = 1  otherwise
//
// Spans come from the reward's parser (reward.Result.Spans: [start, end)
// byte ranges of every argument value in the response text; for a string,
// the content inside the quotes). Token offsets are the [start, end) byte
// ranges each response token produced in that same text
// (tokenizer.DecodeOffsets, which the rollout returns). A token overlaps a
// span when the two ranges share at least one byte: start < spanEnd and
// spanStart < end. So a token that straddles the opening quote and the
// first letters of a value is weighted, while the quotes alone, the
// argument names and the JSON punctuation are not; an empty value ("")
// has no byte and weights no token. Special tokens (empty ranges) are never
// weighted.
//
// The weights multiply the advantage after normalization (group z-score or
// PPO whitening), so β changes the size of the update on argument tokens
// without changing which rollouts are better.

import "sort"

// TokenWeights returns w_t for each token of offsets given the argument
// value spans. With beta = 1 (or no spans) every weight is 1.
func TokenWeights(offsets [][2]int, spans [][2]int, beta float64) []float32 {
	w := make([]float32, len(offsets))
	for i := range w {
		w[i] = 1
	}
	if beta == 1 || len(spans) == 0 {
		return w
	}
	sp := append([][2]int(nil), spans...)
	sort.Slice(sp, func(i, j int) bool { return sp[i][0] < sp[j][0] })
	for i, o := range offsets {
		if o[1] <= o[0] {
			continue
		}
		// The first span that ends after the token starts; spans are few,
		// so a scan per token is cheap and keeps overlapping spans right.
		for _, s := range sp {
			if s[0] >= o[1] {
				break
			}
			if s[1] > o[0] && s[1] > s[0] {
				w[i] = float32(beta)
				break
			}
		}
	}
	return w
}

// WeightAdvantage returns Â_t = w_t·a for each token.
func WeightAdvantage(a float64, w []float32) []float32 {
	out := make([]float32, len(w))
	for t, wt := range w {
		out[t] = float32(float64(wt) * a)
	}
	return out
}
