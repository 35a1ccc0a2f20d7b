package data

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"sort"
)

// Split modes for SplitConfig.Mode.
const (
	// SplitRandom assigns records uniformly at random (by seeded hash of id).
	SplitRandom = "random"
	// SplitLearnability is paper 000's Split-1: high API overlap between
	// training and evaluation (default target overlap 1.0: every evaluation
	// API is seen in training, as far as the data allows).
	SplitLearnability = "learnability"
	// SplitGeneralization is paper 000's Split-2: minimal API overlap
	// (default target overlap 0.0: evaluation APIs are held out whole).
	SplitGeneralization = "generalization"
)

// SplitConfig configures Split. Validation and Test are fractions of the
// records (of those with gold calls, for the API modes); the rest is train.
type SplitConfig struct {
	Mode       string  // random, learnability or generalization
	Seed       uint64  // same seed and same ids give the same assignment, in any input order
	Validation float64 // fraction for validation, in [0, 1)
	Test       float64 // fraction for test, in [0, 1); Validation+Test < 1
	// Overlap is the target API overlap of the evaluation records (see
	// Overlap), in [0, 1]; negative means the mode's default (learnability
	// 1.0, generalization 0.0). Paper 000 App. A.6 reports 17% and 6%.
	Overlap float64
}

// SplitReport says what Split did. Overlap figures are as defined on
// APIOverlap.
type SplitReport struct {
	Train, Validation, Test int
	TestOverlap             Overlap // test against train
	ValidationOverlap       Overlap // validation against train
	APIs                    int     // distinct gold API names
	Components              int     // groups of APIs linked by co-occurring in a record
}

func (r SplitReport) String() string {
	return fmt.Sprintf("train %d, validation %d, test %d; API overlap: test %s, validation %s (%d APIs in %d groups)",
		r.Train, r.Validation, r.Test, r.TestOverlap, r.ValidationOverlap, r.APIs, r.Components)
}

// Overlap is the API overlap of an evaluation set against a training set
// (paper 000 App. A.6: "the fraction of test examples whose ground-truth API
// appears at least once in training"). Precisely: among the evaluation
// records that have gold calls (Records), Overlapping counts those with at
// least one gold call whose name is also the name of a gold call of some
// training record. Records without gold calls (irrelevance) have no
// ground-truth API and are left out of both counts. Fraction is
// Overlapping/Records, or 0 when Records is 0.
type Overlap struct {
	Records, Overlapping int
}

// Fraction is Overlapping/Records (0 for no records).
func (o Overlap) Fraction() float64 {
	if o.Records == 0 {
		return 0
	}
	return float64(o.Overlapping) / float64(o.Records)
}

func (o Overlap) String() string {
	return fmt.Sprintf("%.1f%% (%d/%d)", 100*o.Fraction(), o.Overlapping, o.Records)
}

// APIOverlap measures the overlap of eval against train (see Overlap).
func APIOverlap(train, eval []Record) Overlap {
	seen := map[string]bool{}
	for _, r := range train {
		for _, c := range r.Calls {
			seen[c.Name] = true
		}
	}
	var o Overlap
	for _, r := range eval {
		if len(r.Calls) == 0 {
			continue
		}
		o.Records++
		for _, c := range r.Calls {
			if seen[c.Name] {
				o.Overlapping++
				break
			}
		}
	}
	return o
}

// BySplit groups records by their Split field.
func BySplit(recs []Record) (train, validation, test []Record) {
	for _, r := range recs {
		switch r.Split {
		case "train":
			train = append(train, r)
		case "validation":
			validation = append(validation, r)
		case "test":
			test = append(test, r)
		}
	}
	return train, validation, test
}

// Split sets recs[i].Split for every record and reports the result.
//
// random: records are ordered by a seeded hash of their id; the first
// round(Validation·n) go to validation, the next round(Test·n) to test.
//
// learnability and generalization work on the records with gold calls
// (records without calls are split as in random mode). APIs that co-occur in
// a record form a group. Evaluation gets round((Validation+Test)·n) records:
// a share 1−Overlap of them comes from whole groups held out of training
// (their APIs are unseen), a share Overlap from the other groups, taking
// only records whose every API keeps at least one more training record (so
// they stay overlapping). When the data cannot supply one kind, the other
// fills in; the report gives the overlap achieved. Evaluation records are
// then divided between validation and test in proportion. Because groups
// move whole, the evaluation set can exceed its requested size by less than
// one group (never beyond 1.5×); a shortfall is filled with the other kind.
func Split(recs []Record, cfg SplitConfig) (SplitReport, error) {
	if cfg.Validation < 0 || cfg.Test < 0 || cfg.Validation+cfg.Test >= 1 || math.IsNaN(cfg.Validation+cfg.Test) {
		return SplitReport{}, fmt.Errorf("split: fractions validation=%v test=%v must be ≥ 0 with a sum below 1", cfg.Validation, cfg.Test)
	}
	target := cfg.Overlap
	switch cfg.Mode {
	case SplitRandom, "":
		splitRandom(recs, allIndices(len(recs)), cfg)
	case SplitLearnability, SplitGeneralization:
		if target < 0 {
			target = 1
			if cfg.Mode == SplitGeneralization {
				target = 0
			}
		}
		if target > 1 || math.IsNaN(target) {
			return SplitReport{}, fmt.Errorf("split: overlap %v must be in [0, 1]", cfg.Overlap)
		}
		var withCalls, without []int
		for i := range recs {
			if len(recs[i].Calls) > 0 {
				withCalls = append(withCalls, i)
			} else {
				without = append(without, i)
			}
		}
		splitRandom(recs, without, cfg)
		splitAPI(recs, withCalls, cfg, target)
	default:
		return SplitReport{}, fmt.Errorf("split: unknown mode %q (valid: random, learnability, generalization)", cfg.Mode)
	}
	train, val, test := BySplit(recs)
	rep := SplitReport{Train: len(train), Validation: len(val), Test: len(test),
		TestOverlap: APIOverlap(train, test), ValidationOverlap: APIOverlap(train, val)}
	apis := map[string]bool{}
	for _, r := range recs {
		for _, c := range r.Calls {
			apis[c.Name] = true
		}
	}
	rep.APIs = len(apis)
	roots, _ := components(recs, allIndices(len(recs)))
	rep.Components = len(roots)
	return rep, nil
}

func allIndices(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// seededHash orders ids independently of input order.
func seededHash(seed uint64, s string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(s))
	return mix64(h.Sum64())
}

// mix64 is splitmix64's finalizer, spreading fnv's low-entropy high bits.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func shuffled(recs []Record, idx []int, seed uint64) []int {
	out := append([]int(nil), idx...)
	sort.Slice(out, func(a, b int) bool {
		ha, hb := seededHash(seed, recs[out[a]].ID), seededHash(seed, recs[out[b]].ID)
		if ha != hb {
			return ha < hb
		}
		return recs[out[a]].ID < recs[out[b]].ID
	})
	return out
}

func round(x float64) int { return int(math.Floor(x + 0.5)) }

func splitRandom(recs []Record, idx []int, cfg SplitConfig) {
	order := shuffled(recs, idx, cfg.Seed)
	nv := round(cfg.Validation * float64(len(order)))
	nt := round(cfg.Test * float64(len(order)))
	for k, i := range order {
		switch {
		case k < nv:
			recs[i].Split = "validation"
		case k < nv+nt:
			recs[i].Split = "test"
		default:
			recs[i].Split = "train"
		}
	}
}

// components groups record indices by connected API names (union-find),
// ordered by each group's smallest API name, which it returns too.
func components(recs []Record, idx []int) ([]string, [][]int) {
	parent := map[string]string{}
	var find func(string) string
	find = func(x string) string {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	for _, i := range idx {
		calls := recs[i].Calls
		if len(calls) == 0 {
			continue
		}
		for _, c := range calls {
			if _, ok := parent[c.Name]; !ok {
				parent[c.Name] = c.Name
			}
		}
		for _, c := range calls[1:] {
			a, b := find(calls[0].Name), find(c.Name)
			if a != b {
				if b < a {
					a, b = b, a
				}
				parent[b] = a
			}
		}
	}
	groups := map[string][]int{}
	for _, i := range idx {
		if len(recs[i].Calls) == 0 {
			continue
		}
		root := find(recs[i].Calls[0].Name)
		groups[root] = append(groups[root], i)
	}
	// the root is the smallest name of its group (union keeps the smaller).
	roots := sortedKeys(groups)
	out := make([][]int, len(roots))
	for k, r := range roots {
		out[k] = groups[r]
	}
	return roots, out
}

func splitAPI(recs []Record, idx []int, cfg SplitConfig, target float64) {
	nEval := round((cfg.Validation + cfg.Test) * float64(len(idx)))
	wantOver := round(target * float64(nEval))
	wantHeld := nEval - wantOver
	roots, groups := components(recs, idx)
	order := allIndices(len(roots))
	sort.SliceStable(order, func(a, b int) bool {
		return seededHash(cfg.Seed, roots[order[a]]) < seededHash(cfg.Seed, roots[order[b]])
	})
	comps := make([][]int, len(order))
	for k, o := range order {
		comps[k] = groups[o]
	}
	for _, i := range idx {
		recs[i].Split = "train"
	}
	var eval []int
	held := make([]bool, len(comps))
	// holdOut moves whole groups that fit into need to evaluation; if need
	// is left, it takes the smallest further group as long as evaluation
	// stays within 1.5× its requested size. It returns the need left (may
	// be < 0).
	holdOut := func(need int) int {
		take := func(k int) {
			held[k] = true
			for _, i := range comps[k] {
				recs[i].Split = "eval"
			}
			eval = append(eval, comps[k]...)
			need -= len(comps[k])
		}
		for k, c := range comps {
			if need <= 0 {
				return need
			}
			if !held[k] && len(c) <= need && !anyEval(recs, c) {
				take(k)
			}
		}
		best := -1
		for k, c := range comps {
			fits := 2*(len(eval)+len(c)) <= 3*nEval // at most 1.5× the request
			if need > 0 && fits && !held[k] && !anyEval(recs, c) && (best < 0 || len(c) < len(comps[best])) {
				best = k
			}
		}
		if best >= 0 {
			take(best)
		}
		return need
	}
	// overlapping takes records of groups kept in training whose every API
	// keeps another training record.
	overlapping := func(need int) int {
		count := map[string]int{}
		var cand []int
		for k, c := range comps {
			if held[k] {
				continue
			}
			for _, i := range c {
				if recs[i].Split != "train" {
					continue
				}
				for _, name := range callNames(recs[i]) {
					count[name]++
				}
				cand = append(cand, i)
			}
		}
		for _, i := range shuffled(recs, cand, cfg.Seed^0x9e3779b97f4a7c15) {
			if need <= 0 {
				break
			}
			names := callNames(recs[i])
			ok := true
			for _, n := range names {
				ok = ok && count[n] >= 2
			}
			if !ok {
				continue
			}
			for _, n := range names {
				count[n]--
			}
			recs[i].Split = "eval"
			eval = append(eval, i)
			need--
		}
		return need
	}
	left := 0
	if wantHeld > 0 {
		left = holdOut(wantHeld)
	}
	left = overlapping(wantOver + left)
	if left > 0 { // not enough overlapping records: fill with held-out groups
		holdOut(left)
	}
	nVal := 0
	if cfg.Validation+cfg.Test > 0 {
		nVal = round(cfg.Validation / (cfg.Validation + cfg.Test) * float64(len(eval)))
	}
	for k, i := range shuffled(recs, eval, cfg.Seed+1) {
		if k < nVal {
			recs[i].Split = "validation"
		} else {
			recs[i].Split = "test"
		}
	}
}

// callNames lists the distinct gold call names of a record.
func callNames(r Record) []string {
	var out []string
	for _, c := range r.Calls {
		dup := false
		for _, o := range out {
			dup = dup || o == c.Name
		}
		if !dup {
			out = append(out, c.Name)
		}
	}
	return out
}

func anyEval(recs []Record, idx []int) bool {
	for _, i := range idx {
		if recs[i].Split == "eval" {
			return true
		}
	}
	return false
}
