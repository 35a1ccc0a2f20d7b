package trainer

// The data-parallel side of an RL step (team.go): each rank rolls out,
// scores and runs the model on the items of the shares it holds, and these
// functions hand every rank the host view of every item (samples, rewards,
// critic values), so that advantages, loss normalizations and metrics are
// computed alike on every rank. On one process they only reorder nothing.

import (
	"fmt"

	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/reward"
	"github.com/argrl/argrl/rollout"
	"github.com/argrl/argrl/trainer/rl"
)

// heldPositions returns the positions of a step's prompts (their shares:
// shareOf) that this rank holds, share by share.
func (t *team) heldPositions(shareOf []int) []int {
	var out []int
	for s, at := range t.byShare(shareOf) {
		if t.holds(s) {
			out = append(out, at...)
		}
	}
	return out
}

// spreadGroups returns the samples of each of a step's prompts (their
// shares: shareOf), by position, on every rank: groups are this rank's, in
// the order of held (heldPositions); err is its failure so far.
func (t *team) spreadGroups(err error, shareOf, held []int, groups []*rollout.Group) ([][]rollout.Sample, error) {
	if err == nil && len(groups) != len(held) {
		err = fmt.Errorf("rollout: %d groups for %d prompts", len(groups), len(held))
	}
	perShare := make([][][]rollout.Sample, t.shares)
	if err == nil {
		for i, at := range held {
			s := shareOf[at]
			perShare[s] = append(perShare[s], groups[i].Samples)
		}
	}
	all, err := shareValues(t, err, mine(t, perShare))
	if err != nil {
		return nil, err
	}
	pos := t.byShare(shareOf)
	out := make([][]rollout.Sample, len(shareOf))
	for s, gs := range all {
		for k, g := range gs {
			if k < len(pos[s]) {
				out[pos[s][k]] = g
			}
		}
	}
	for at, g := range out {
		if g == nil {
			return nil, fmt.Errorf("rollout: no samples for prompt %d of the step", at)
		}
	}
	return out, nil
}

// resultWire is what another rank needs of a rollout's reward: what the
// metrics, the advantages and the rollout samples read. A result from
// another rank carries these fields only (no Args, no Outcome).
type resultWire struct {
	Reward  float64
	Gate    string
	Metrics reward.Levels
	Parts   map[string]float64
	Terms   map[string]float64 // adv.per_part normalizes each term
	Spans   [][2]int
}

// toWire and fromWire convert a result for another rank.
func toWire(r *reward.Result) resultWire {
	return resultWire{r.Reward, r.Gate, r.Metrics, r.Parts, r.Terms, r.Spans}
}

func fromWire(w resultWire) *reward.Result {
	return &reward.Result{Reward: w.Reward, Gate: w.Gate, Metrics: w.Metrics, Parts: w.Parts, Terms: w.Terms, Spans: w.Spans}
}

// spread gives every rank a value of every item, each computed by the rank
// holding the item: get reads it from a held item, set stores another
// rank's (a reward result, the critic's values). err is this rank's
// failure so far.
func spread[T any](t *team, err error, items []*item, get func(*item) T, set func(*item, T)) error {
	if t.size() == 1 {
		return err
	}
	perShare := make([][]T, t.shares)
	if err == nil {
		for _, it := range items {
			if t.holds(it.share) {
				perShare[it.share] = append(perShare[it.share], get(it))
			}
		}
	}
	all, err := shareValues(t, err, mine(t, perShare))
	if err != nil {
		return err
	}
	next := make([]int, t.shares)
	for _, it := range items {
		k := next[it.share]
		next[it.share]++
		if t.holds(it.share) {
			continue
		}
		if k >= len(all[it.share]) {
			return fmt.Errorf("dist: share %d sent %d values, fewer than its rollouts", it.share, len(all[it.share]))
		}
		set(it, all[it.share][k])
	}
	return nil
}

// seqLens returns the tokens of items' sequences, for team.dealTokens.
func seqLens(items []*item) []int {
	out := make([]int, len(items))
	for i, it := range items {
		out[i] = len(it.seq)
	}
	return out
}

// shareOf returns the shares of items, for team.deal.
func shareOf(items []*item) []int {
	out := make([]int, len(items))
	for i, it := range items {
		out[i] = it.share
	}
	return out
}

// heldShares returns this rank's items of items, grouped by share in
// share order (shares without items left out).
func (t *team) heldShares(items []*item) [][]*item {
	by := make([][]*item, t.shares)
	for _, it := range items {
		if t.holds(it.share) {
			by[it.share] = append(by[it.share], it)
		}
	}
	var out [][]*item
	for _, g := range by {
		if len(g) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// miniBatch accumulates the gradients of one mini-batch: its micro-batches
// of r.micro() rollouts, share by share, each rank running its shares'
// (team.accumulate), every rank then holding the all-reduced sum. The
// stats are every share's, summed in share order.
func (r *rlRun) miniBatch(mini []*item, obj rl.Objective, agg rl.Aggregation) (rl.LossStats, error) {
	m, t := r.Setup.Model, r.team
	chunks := t.dealTokens(r.micro(), shareOf(mini), seqLens(mini))
	stats := make([]rl.LossStats, t.shares)
	base := m.DropoutCounter()
	err := t.accumulate(r.Setup.Backend, r.Opt.Params(), chunks, func(j int) error {
		c := chunks[j]
		seqs := make([][]int32, len(c.at))
		specs := make([]rl.Seq, len(c.at))
		for b, at := range c.at {
			it := mini[at]
			seqs[b], specs[b] = it.seq, rl.Seq{Start: it.start, R: &it.roll, Agg: at}
		}
		m.SetDropoutCounter(base + uint64(j))
		err := m.Step(seqs, func(o *model.Outputs) (*model.Grads, error) {
			// o.Values is nil without a value head (GRPO).
			dlp, dv, s, err := obj.Grads(specs, agg, o.LogProbs, o.Entropy, o.Values)
			stats[c.share].Add(s)
			return &model.Grads{LogProbs: dlp, Values: dv}, err
		})
		if err != nil {
			return fmt.Errorf("update: %w", err)
		}
		return nil
	})
	m.SetDropoutCounter(base + uint64(len(chunks)))
	all, err := shareValues(t, err, mine(t, stats))
	var st rl.LossStats
	for _, s := range all {
		st.Add(s)
	}
	return st, err
}
