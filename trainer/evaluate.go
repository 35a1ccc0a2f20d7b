package trainer

// Validation, shared by every recipe (docs/contracts.md §3, §6):
//
//	loss   token-mean NLL of the assistant targets (adapters on, no dropout):
//	       −Σ_{examples,t: mask} log p(x_t | x_<t) / Σ mask, batches of optim.batch_size
//	rates  one greedy response per example from the rollout engine (the
//	       prompt ids of the training sequence, rollout.max_new_tokens, the
//	       tokenizer's stop ids and rollout.stop), scored by the Scorer that
//	       also computes the rewards: tid tsa aca alc fcm, exact_match,
//	       name_acc, arg_score (and alc_cont, the mean ALC_cont over turns
//	       with textual arguments, when there are any); per language
//	       (data.Record.lang) the five rates again as tid.<lang> …
//	       fcm.<lang>, e.g. fcm.es, for the run report's tables
//
// data.val_max caps the examples used (the file's first N), so a large
// validation file can be sampled cheaply every eval_every steps.
//
// With several ranks (trainer/ranks) the examples are dealt over them like
// a step's records: each rank computes the loss of its batches and the
// greedy responses of its examples, every rank receives the sums and the
// texts, and rank 0 alone scores them (the other ranks' Evaluate returns
// nil metrics and the texts).

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/reward"
	"github.com/argrl/argrl/rollout"
	"github.com/argrl/argrl/trainer/metrics"
	"github.com/argrl/argrl/trainer/ranks"
)

// EvalOptions choose what Evaluate computes.
type EvalOptions struct {
	Max      int  // examples used (0: all)
	NoLoss   bool // skip the validation loss
	Generate bool // greedy generation and the metric rates
}

// Evaluate validates the model on ds; see the file header. It returns the
// metrics (keys as metrics.jsonl logs them) and, with Generate, the report
// and the generated texts.
func (s *Setup) Evaluate(ctx context.Context, ds *Dataset, o EvalOptions) (metrics.Metrics, *reward.Report, []string, error) {
	exs := ds.Examples
	if o.Max > 0 && o.Max < len(exs) {
		exs = exs[:o.Max]
	}
	m := metrics.Metrics{}
	if !o.NoLoss {
		loss, err := s.ValLoss(exs)
		if err != nil {
			return nil, nil, nil, err
		}
		m["loss"] = loss
	}
	chat := 0 // plain conversations have no call to score
	for _, ex := range exs {
		if ex.Rec.PlainChat() {
			chat++
		}
	}
	if chat > 0 && o.Generate && !s.notedChat {
		s.notedChat = true
		fmt.Fprintf(s.log, "evaluate %s: %d of %d records are plain chat (no tools): the call metrics (TID…FCM) skip them\n", ds.Path, chat, len(exs))
	}
	if !o.Generate || chat == len(exs) {
		if !s.ranks.Lead() {
			return nil, nil, nil, nil
		}
		return m, nil, nil, nil
	}
	texts, err := s.greedyAll(ctx, exs)
	if err != nil {
		return nil, nil, nil, err
	}
	if !s.ranks.Lead() {
		return nil, nil, texts, nil
	}
	recs := make([]data.Record, 0, len(exs))
	scored := texts
	if chat > 0 {
		scored = make([]string, 0, len(exs)-chat)
	}
	for i, ex := range exs {
		if !ex.Rec.PlainChat() {
			recs = append(recs, *ex.Rec)
			if chat > 0 {
				scored = append(scored, texts[i])
			}
		}
	}
	s.warnFormat("evaluate", "evaluate "+ds.Path, scored)
	rep, outs, err := s.Scorer.Evaluate(ctx, recs, scored)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("evaluate %s: %w", ds.Path, err)
	}
	m["tid"], m["tsa"], m["aca"], m["alc"], m["fcm"] = rep.TID, rep.TSA, rep.ACA, rep.ALC, rep.FCM
	langRates(m, recs, outs)
	m["exact_match"], m["name_acc"], m["arg_score"] = rep.ExactMatch, rep.NameAcc, rep.ArgScore
	if rep.Judged > 0 {
		m["alc_cont"] = rep.ALCCont
	}
	return m, &rep, texts, nil
}

// warnFormat prints format.Mismatch's one-line warning when more than half
// of texts have no call in the configured format but calls in another;
// once per kind of output (a step's rollouts, an evaluation) and run.
func (s *Setup) warnFormat(kind, what string, texts []string) {
	if s.warned[kind] || !s.ranks.Lead() {
		return
	}
	m := format.NewMismatch(s.Format)
	for _, t := range texts {
		m.Add(t)
	}
	if w := m.Warning(what); w != "" {
		if s.warned == nil {
			s.warned = map[string]bool{}
		}
		s.warned[kind] = true
		fmt.Fprintln(s.log, w)
	}
}

// nllSum is a part's share of the validation loss (it travels between
// ranks).
type nllSum struct {
	NLL float64
	N   int
}

// ValLoss is the token-mean NLL over the assistant targets of exs: batches
// of optim.batch_size (or of optim.micro_tokens tokens), longest first,
// dealt over the ranks (the same value on every rank).
func (s *Setup) ValLoss(exs []Example) (float64, error) {
	idx := make([]int, len(exs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return len(exs[idx[a]].IDs) > len(exs[idx[b]].IDs) })
	bs := max(1, s.Config.Optim.BatchSize)
	lens := make([]int, len(idx))
	for i, at := range idx {
		lens[i] = len(exs[at].IDs)
	}
	// dealt by rows, cut by optim.micro_tokens when set (each share then
	// sums its examples in the same order: the same value either way)
	sums, err := ranks.Fold(s.ranks, s.ranks.Deal(len(idx), bs), bs, lens, func(b ranks.Batch, sum *nllSum) error {
		seqs := make([][]int32, len(b.At))
		for i, at := range b.At {
			seqs[i] = exs[idx[at]].IDs
		}
		lp, err := s.Model.LogProbs(seqs, true)
		if err != nil {
			return fmt.Errorf("validation loss: %w", err)
		}
		for i, at := range b.At {
			for t, on := range exs[idx[at]].Mask {
				if on && t > 0 {
					sum.NLL -= float64(lp[i][t])
					sum.N++
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	var nll float64
	var n int
	for _, p := range sums {
		nll += p.NLL
		n += p.N
	}
	if n == 0 {
		return math.NaN(), nil
	}
	return nll / float64(n), nil
}

// greedyAll is Greedy with the examples dealt over the ranks: every rank
// gets every text.
func (s *Setup) greedyAll(ctx context.Context, exs []Example) ([]string, error) {
	dealt := s.ranks.Deal(len(exs), max(1, s.Config.Optim.BatchSize))
	return ranks.Map(s.ranks, dealt, 0, nil, func(b ranks.Batch) ([]string, error) {
		mine := make([]Example, len(b.At))
		for i, at := range b.At {
			mine[i] = exs[at]
		}
		return s.Greedy(ctx, mine)
	})
}

// Greedy returns one greedy response text per example (its prompt ids),
// through the rollout engine.
func (s *Setup) Greedy(ctx context.Context, exs []Example) ([]string, error) {
	eng, err := rollout.New(s.Model, rollout.Options{Batch: min(64, max(1, len(exs))), Tokenizer: s.Tokenizer, MaxLen: s.MaxLen})
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	defer eng.Close()
	prompts := make([]rollout.Prompt, len(exs))
	for i, ex := range exs {
		prompts[i] = rollout.Prompt{ID: ex.Rec.ID, IDs: ex.IDs[:ex.PromptLen]}
	}
	p := rollout.Params{G: 1, MaxNewTokens: s.Config.Rollout.MaxNewTokens,
		StopIDs: rollout.StopIDs(s.Tokenizer, s.Model.Config), Stop: s.Config.Rollout.Stop}
	out, err := eng.Greedy(ctx, prompts, p)
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	texts := make([]string, len(out))
	for i, smp := range out {
		texts[i] = smp.Text
	}
	return texts, nil
}

// langRates adds tid.<lang> … fcm.<lang> over the records of each language
// (records without a language are left out of these keys).
func langRates(m metrics.Metrics, recs []data.Record, outs []*reward.Outcome) {
	aggs := map[string]*reward.Aggregate{}
	for i, rec := range recs {
		if rec.Lang == "" || i >= len(outs) || outs[i] == nil {
			continue
		}
		a := aggs[rec.Lang]
		if a == nil {
			a = &reward.Aggregate{}
			aggs[rec.Lang] = a
		}
		a.Add(outs[i])
	}
	for lang, a := range aggs {
		r := a.Report()
		m["tid."+lang], m["tsa."+lang], m["aca."+lang], m["alc."+lang], m["fcm."+lang] = r.TID, r.TSA, r.ACA, r.ALC, r.FCM
	}
}

// evaluate runs the shared validation (loss, greedy generation,
// docs/contracts.md §3 rates), adds the reward of the greedy responses
// (multi-turn: of greedy episodes, episodes.go) and prints the eval line.
func (r *rlRun) evaluate(ctx context.Context, step int) (metrics.Metrics, error) {
	s := r.Setup
	e, _, texts, err := s.Evaluate(ctx, s.Val, EvalOptions{Max: r.Config.Data.ValMax, Generate: true})
	if err != nil || e == nil { // e is nil on ranks > 0: rank 0 scores
		return nil, err
	}
	if r.mt != nil {
		err = r.evalEpisodes(ctx, e)
	} else {
		err = r.evalResponses(ctx, e, texts)
	}
	if err != nil {
		return nil, err
	}
	r.Progress.Printf("eval step %d: reward %.3f  TID %.3f TSA %.3f ACA %.3f ALC %.3f FCM %.3f", step,
		e["reward_mean"], e["tid"], e["tsa"], e["aca"], e["alc"], e["fcm"])
	return e, nil
}

// evalResponses adds the mean reward of the greedy validation responses
// texts to e.
func (r *rlRun) evalResponses(ctx context.Context, e metrics.Metrics, texts []string) error {
	var sum float64
	for i, t := range texts {
		res, err := r.rw.Score(ctx, r.Setup.Val.Examples[i].Rec, t)
		if err != nil {
			return fmt.Errorf("eval reward: %w", err)
		}
		sum += res.Reward
	}
	if len(texts) > 0 {
		e["reward_mean"] = sum / float64(len(texts))
	}
	return nil
}
