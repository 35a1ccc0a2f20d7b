package reward

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/reward/internal/norm"
	"github.com/argrl/argrl/reward/sim"
)

// R2IF's composite reward (papers 002/003, docs/contracts.md §4):
//
//	R = w_b·(format ∧ correct) + w_cer·R_cer + w_smv·R_smv
//
//   - format ∧ correct is the binary reward (for reason_tool, format is
//     paper 002's strict block rule and a no-call must be the rejection
//     string).
//   - R_cer = v(R|Q,T) − v_base(Q,T): the fraction of K student responses
//     that are exactly correct when the student continues after the
//     policy's reasoning R, minus the same fraction without it (cached per
//     record id). An empty reasoning gives R_cer = 0.
//   - R_smv: for each gold call exactly matched by a predicted call, the
//     mean over its arguments p of
//     [sim(snippet_p, spec_p) + sim(snippet_p, mod_p) + (p present)] / 3,
//     then the mean over gold calls (unmatched ones count 0; a matched
//     call without arguments counts 1). For a gold no-call:
//     sim(reasoning, reject_reason).
//
// Where the paper leaves the "answer reasoning document" undefined, argrl
// takes as the snippet of argument p the sentences of the reasoning that
// name p (as written, or with _ read as a space) or contain its predicted
// value; no such sentence gives an empty snippet (similarity 0).

// Student is the model that estimates CER: given a record and a reasoning
// text, it returns k sampled full responses in the reward's format, each
// continuing after that reasoning ("" lets the student reason itself).
type Student interface {
	Complete(ctx context.Context, rec *data.Record, reasoning string, k int) ([]string, error)
}

func init() { register("r2if", newR2IF) }

type r2if struct {
	c   R2IFConfig
	s   *Scorer
	st  Student
	sim sim.Similarity

	mu   sync.Mutex
	base map[string]float64 // v_base per record id
}

func newR2IF(c Config, s *Scorer) (Reward, error) {
	if c.Format != "reason_tool" {
		f := c.Format
		if f == "" {
			f = "tool_call"
		}
		return nil, fmt.Errorf("reward r2if: it scores the <reason> block of format reason_tool, and the responses are in %s (docs/contracts.md §2): give format reason_tool", f)
	}
	if c.R2IF.WCER != 0 && c.Student == nil {
		return nil, fmt.Errorf("reward r2if: CER needs a student model (reward.student in a run config, --student for train reward) or r2if.w_cer: 0")
	}
	if c.R2IF.WCER != 0 && c.R2IF.K <= 0 {
		return nil, fmt.Errorf("reward r2if: r2if.k must be > 0, got %d", c.R2IF.K)
	}
	sm := c.Similarity
	if sm == nil {
		var err error
		if sm, err = sim.New(c.R2IF.Sim, c.SimCorpus); err != nil {
			return nil, fmt.Errorf("reward r2if: %w", err)
		}
	}
	return &r2if{c: c.R2IF, s: s, st: c.Student, sim: sm, base: map[string]float64{}}, nil
}

func (*r2if) Name() string { return "r2if" }

// Score implements Reward.
func (r *r2if) Score(ctx context.Context, rec *data.Record, text string) (*Result, error) {
	o, err := r.s.Score(ctx, rec, text)
	if err != nil {
		return nil, err
	}
	res := result(o, matchScore)
	bin := 0.0
	if o.Exact {
		bin = 1
	}
	cer, err := r.cer(ctx, rec, o.Parsed.Reasoning)
	if err != nil {
		return nil, err
	}
	smv, err := r.smv(ctx, rec, o)
	if err != nil {
		return nil, err
	}
	res.Parts["binary"], res.Parts["cer"], res.Parts["smv"] = bin, cer, smv
	res.Reward = r.c.WBinary*bin + r.c.WCER*cer + r.c.WSMV*smv
	res.Terms = map[string]float64{"binary": r.c.WBinary * bin, "cer": r.c.WCER * cer, "smv": r.c.WSMV * smv}
	res.Gate = "wrong"
	if o.Exact {
		res.Gate = "exact"
	}
	return res, nil
}

// successRate is the fraction of the student's k responses that are
// exactly correct.
func (r *r2if) successRate(ctx context.Context, rec *data.Record, reasoning string) (float64, error) {
	outs, err := r.st.Complete(ctx, rec, reasoning, r.c.K)
	if err != nil {
		return 0, fmt.Errorf("reward r2if: student on %s: %w", rec.ID, err)
	}
	if len(outs) == 0 {
		return 0, fmt.Errorf("reward r2if: student returned no response for %s", rec.ID)
	}
	ok := 0
	for _, t := range outs {
		o, err := r.s.Score(ctx, rec, t)
		if err != nil {
			return 0, err
		}
		if o.Exact {
			ok++
		}
	}
	return float64(ok) / float64(len(outs)), nil
}

func (r *r2if) cer(ctx context.Context, rec *data.Record, reasoning string) (float64, error) {
	if r.c.WCER == 0 || strings.TrimSpace(reasoning) == "" {
		return 0, nil
	}
	r.mu.Lock()
	base, ok := r.base[rec.ID]
	r.mu.Unlock()
	if !ok {
		b, err := r.successRate(ctx, rec, "")
		if err != nil {
			return 0, err
		}
		r.mu.Lock()
		r.base[rec.ID] = b
		r.mu.Unlock()
		base = b
	}
	v, err := r.successRate(ctx, rec, reasoning)
	if err != nil {
		return 0, err
	}
	return v - base, nil
}

func (r *r2if) smv(ctx context.Context, rec *data.Record, o *Outcome) (float64, error) {
	reasoning := o.Parsed.Reasoning
	if o.GoldNoCall {
		if rec.RejectReason == "" {
			return 0, nil
		}
		return r.sim.Sim(ctx, reasoning, rec.RejectReason)
	}
	sents := sentences(reasoning)
	total := 0.0
	for _, pr := range o.Pairs {
		if !pr.Exact {
			continue
		}
		g := rec.Calls[pr.Gold]
		call := o.Parsed.Calls[pr.Pred]
		var docs map[string]data.SMVDoc
		if pr.Gold < len(rec.SMV) {
			docs = rec.SMV[pr.Gold]
		}
		keys := sortedKeys(g.Arguments)
		if len(keys) == 0 {
			total++
			continue
		}
		sum := 0.0
		for _, p := range keys {
			pv, present := call.Arguments[p]
			snip := snippet(sents, p, pv, present)
			doc := docs[p]
			ss, err := r.sim.Sim(ctx, snip, doc.Spec)
			if err != nil {
				return 0, err
			}
			sm, err := r.sim.Sim(ctx, snip, doc.Mod)
			if err != nil {
				return 0, err
			}
			val := 0.0
			if present {
				val = 1
			}
			sum += (ss + sm + val) / 3
		}
		total += sum / float64(len(keys))
	}
	return total / float64(len(rec.Calls)), nil
}

var sentenceEnd = regexp.MustCompile(`[.!?;]\s+|\n+`)

func sentences(s string) []string {
	var out []string
	for _, p := range sentenceEnd.Split(s, -1) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// snippet joins the sentences naming argument p or holding its value.
func snippet(sents []string, p string, v any, present bool) string {
	needles := []string{strings.ToLower(p)}
	if alt := strings.ReplaceAll(strings.ToLower(p), "_", " "); alt != needles[0] {
		needles = append(needles, alt)
	}
	if present {
		if s := strings.ToLower(strings.TrimSpace(norm.String(v))); len(s) >= 3 {
			needles = append(needles, s)
		}
	}
	var hit []string
	for _, s := range sents {
		ls := strings.ToLower(s)
		for _, n := range needles {
			if strings.Contains(ls, n) {
				hit = append(hit, s)
				break
			}
		}
	}
	return strings.Join(hit, " ")
}
