package batch

// Token-budget micro-batches (optim.micro_tokens). A step's records are
// the Batcher's, whatever the budget; the budget only decides how they are
// cut into micro-batches and dealt to the data-parallel shares:
//
//   - Deal gives each record, in order, to the share with the fewest
//     tokens so far (the lowest share on ties). Step groups come longest
//     first, so this is longest-processing-time balancing: the shares'
//     tokens differ by at most the shortest record of the step's tail.
//   - Cut cuts a share's records, in order, into consecutive micro-batches
//     whose cost (the tokens the model's graph computes for them, padding
//     included: model.GraphTokens) stays within the budget; a record over
//     the budget alone goes alone.
//
// Both are functions of the lengths, the share count and the budget only,
// so N ranks and one process with dist.shares: N run the same micro-batches
// (the shares rule of trainer/team.go) and a resumed run the same as an
// uninterrupted one.

// Deal assigns items, given by their token lengths in order, to shares.
func Deal(lengths []int, shares int) []int {
	out := make([]int, len(lengths))
	load := make([]int, max(1, shares))
	for i, n := range lengths {
		s := 0
		for j := range load {
			if load[j] < load[s] {
				s = j
			}
		}
		out[i] = s
		load[s] += n
	}
	return out
}

// Cut splits items, given by their token lengths in order, into
// consecutive micro-batches (positions into lengths): an item joins the
// current micro-batch while cost of the micro-batch's lengths with it stays
// ≤ budget (cost nil: their sum). budget ≤ 0 puts everything in one.
func Cut(lengths []int, budget int, cost func(lengths []int) int) [][]int {
	if cost == nil {
		cost = sum
	}
	var out [][]int
	var cur []int
	var curLens []int
	for i, n := range lengths {
		if len(cur) > 0 && budget > 0 && cost(append(curLens, n)) > budget {
			out = append(out, cur)
			cur, curLens = nil, nil
		}
		cur = append(cur, i)
		curLens = append(curLens, n)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func sum(lengths []int) int {
	n := 0
	for _, x := range lengths {
		n += x
	}
	return n
}

// GraphPadding is the share of padding among the token rows the graphs of
// micro-batches compute: 1 − Σ lengths / Σ cost(micro-batch), with cost
// the rows a micro-batch's graph has (cost nil: right padding to its
// longest record, as PaddingFraction).
func GraphPadding(lengths []int, micro [][]int, cost func(lengths []int) int) float64 {
	if cost == nil {
		cost = func(l []int) int {
			mx := 0
			for _, x := range l {
				mx = max(mx, x)
			}
			return mx * len(l)
		}
	}
	var used, total int
	for _, mb := range micro {
		ls := make([]int, len(mb))
		for k, i := range mb {
			ls[k] = lengths[i]
		}
		used += sum(ls)
		total += cost(ls)
	}
	if total == 0 {
		return 0
	}
	return 1 - float64(used)/float64(total)
}
