package reward

import (
	"context"

	"github.com/argrl/argrl/data"
)

// The reward models of paper 000 §4.2 (docs/contracts.md §4).
//
//	rm1: +2.0 if FCM; 0.0 if TID=TSA=ACA=1 and ALC=0; −1.0 otherwise.
//	rm2: −1.0 if TID=0; −0.5 if TSA=0; +0.5 if ACA=0; +1.0 if ALC_cont ≤ 1.0;
//	     +1.5 if ALC_cont > 1.0 (and not FCM); +2.0 if FCM.
//	rm3: the same gates (−1.0 / −0.5 / +0.5), otherwise ALC_cont on the
//	     RM-3 scale (1/K) Σ S(v), S ∈ {2.5 exact, 2.0 right language, 1.5 mixed, 1.0 mismatch}.
//
// As written, rm1 gives −1.0 to a turn that passes ALC but fails FCM.
// A turn without textual arguments has ALC_cont = Config.NoTextScore
// (default: the scale's top).

func init() {
	register("rm1", func(c Config, s *Scorer) (Reward, error) { return &rm{name: "rm1", c: c, s: s}, nil })
	register("rm2", func(c Config, s *Scorer) (Reward, error) { return &rm{name: "rm2", c: c, s: s}, nil })
	register("rm3", func(c Config, s *Scorer) (Reward, error) { return &rm{name: "rm3", c: c, s: s}, nil })
}

type rm struct {
	name string
	c    Config
	s    *Scorer
}

func (r *rm) Name() string { return r.name }

// Score implements Reward.
func (r *rm) Score(ctx context.Context, rec *data.Record, text string) (*Result, error) {
	o, err := r.s.Score(ctx, rec, text)
	if err != nil {
		return nil, err
	}
	return r.fromOutcome(o), nil
}

func (r *rm) fromOutcome(o *Outcome) *Result {
	rm3 := r.name == "rm3"
	res := result(o, func(a ArgResult) float64 {
		if !a.Textual {
			return 0
		}
		if rm3 {
			return a.Verdict.RM3()
		}
		return a.Verdict.RM2()
	})
	l := o.Levels
	// ALC_cont on this reward's scale.
	cont, top := o.ALCCont, 2.0
	if rm3 {
		cont, top = o.ALCRM3, 2.5
	}
	if o.Textual == 0 {
		cont = top
		if r.c.NoTextScore != 0 {
			cont = r.c.NoTextScore
		}
	}
	if l.ACA {
		res.Parts["alc_cont"] = cont
	}
	switch r.name {
	case "rm1":
		switch {
		case l.FCM:
			res.Reward, res.Gate = 2, "fcm"
		case l.ACA && !l.ALC:
			res.Reward, res.Gate = 0, "alc"
		default:
			res.Reward, res.Gate = -1, "other"
		}
	case "rm2":
		switch {
		case !l.TID:
			res.Reward, res.Gate = -1, "tid"
		case !l.TSA:
			res.Reward, res.Gate = -0.5, "tsa"
		case !l.ACA:
			res.Reward, res.Gate = 0.5, "aca"
		case l.FCM:
			res.Reward, res.Gate = 2, "fcm"
		case cont <= 1.0:
			res.Reward, res.Gate = 1, "alc_mismatch"
		default:
			res.Reward, res.Gate = 1.5, "alc_partial"
		}
	case "rm3":
		switch {
		case !l.TID:
			res.Reward, res.Gate = -1, "tid"
		case !l.TSA:
			res.Reward, res.Gate = -0.5, "tsa"
		case !l.ACA:
			res.Reward, res.Gate = 0.5, "aca"
		default:
			res.Reward, res.Gate = cont, "alc_cont"
		}
	}
	res.Terms = map[string]float64{"gate": res.Reward, "args": 0}
	if l.ACA {
		res.Terms = map[string]float64{"gate": 0, "args": res.Reward}
	}
	return res
}
