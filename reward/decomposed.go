package reward

import (
	"context"

	"github.com/argrl/argrl/data"
)

// Paper 001 A.4's rewards (docs/contracts.md §4):
//
//	decomposed = max(0, 0.2·fmt + 0.3·name_frac + 0.5·arg_frac − 0.1·max(0, |pred|−|gold|))
//	  fmt = 0 → 0; calls matched greedily one-to-one by name; arg_frac is the
//	  mean over matched pairs of (matching gold args / gold args) ×
//	  max(0, 1 − 0.25·extra_args); a gold call without arguments scores 1.0
//	  when the prediction has none, else 0.5; a gold no-call scores 1.0 for
//	  no call, else 0.0.
//	binary = 1.0 iff the format is valid and every gold call is matched
//	  exactly (and no call is extra), else 0.0 (Tool-N1).
//
// Exact match, name accuracy and argument score in Report are the same
// Outcome fields.

func init() {
	register("decomposed", func(c Config, s *Scorer) (Reward, error) { return &decomposed{c: c.Decomposed, s: s}, nil })
	register("binary", func(_ Config, s *Scorer) (Reward, error) { return &binary{s: s}, nil })
}

type decomposed struct {
	c DecomposedConfig
	s *Scorer
}

func (*decomposed) Name() string { return "decomposed" }

// Score implements Reward.
func (d *decomposed) Score(ctx context.Context, rec *data.Record, text string) (*Result, error) {
	o, err := d.s.Score(ctx, rec, text)
	if err != nil {
		return nil, err
	}
	r := result(o, matchScore)
	fmtv := 0.0
	if o.Valid {
		fmtv = 1
	}
	r.Parts["fmt"], r.Parts["name_frac"], r.Parts["arg_frac"] = fmtv, o.NameFrac, o.ArgFrac
	r.Parts["extra_calls"] = float64(o.ExtraCalls)
	switch {
	case !o.Valid:
		r.Reward, r.Gate = 0, "format"
	case o.GoldNoCall:
		r.Gate = "no_call"
		if o.PredNoCall {
			r.Reward = 1
		}
	default:
		r.Gate = "args"
		r.Reward = max(0, d.c.FormatWeight*fmtv+d.c.NameWeight*o.NameFrac+d.c.ArgsWeight*o.ArgFrac-
			d.c.ExtraCallPenalty*float64(o.ExtraCalls))
	}
	r.Terms = map[string]float64{"fmt": d.c.FormatWeight * fmtv, "name": d.c.NameWeight * o.NameFrac,
		"args": d.c.ArgsWeight * o.ArgFrac, "extra_calls": -d.c.ExtraCallPenalty * float64(o.ExtraCalls)}
	sum := r.Terms["fmt"] + r.Terms["name"] + r.Terms["args"] + r.Terms["extra_calls"]
	r.Terms["rest"] = r.Reward - sum
	return r, nil
}

type binary struct{ s *Scorer }

func (*binary) Name() string { return "binary" }

// Score implements Reward.
func (b *binary) Score(ctx context.Context, rec *data.Record, text string) (*Result, error) {
	o, err := b.s.Score(ctx, rec, text)
	if err != nil {
		return nil, err
	}
	r := result(o, matchScore)
	r.Parts["exact"] = 0
	r.Gate = "wrong"
	if o.Exact {
		r.Reward, r.Parts["exact"], r.Gate = 1, 1, "exact"
	}
	r.Terms = map[string]float64{"exact": r.Reward}
	return r, nil
}
