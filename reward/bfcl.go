package reward

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/internal/bfcl"
)

// bfcl (docs/contracts.md §4) is 1 exactly when BFCL's own AST checker
// marks the response valid for the record's BFCL category, else 0; Gate is
// "valid" or the checker's error type, and Parts holds "valid" (0 or 1)
// plus the error type with 1. The rules are the checker's, not §3's
// normalization: Python's exact types (with JSON numbers keeping their int
// or float form from the response text), its string standardization,
// optional "", greedy parallel matching, relevance by decoding; they are
// listed, with where they depart from the checker, in internal/bfcl. The
// metrics of the Result are the §3 levels, computed as for every reward.
// A record needs the "bfcl" case the BFCL importer writes.
func init() {
	register("bfcl", func(_ Config, s *Scorer) (Reward, error) { return &bfclReward{s: s}, nil })
}

type bfclReward struct{ s *Scorer }

func (*bfclReward) Name() string { return "bfcl" }

// Score implements Reward.
func (b *bfclReward) Score(ctx context.Context, rec *data.Record, text string) (*Result, error) {
	p := b.s.Format.Parse(text)
	v, err := BFCLCheck(rec, p)
	if err != nil {
		return nil, err
	}
	o, err := b.s.ScoreParsed(ctx, rec, p)
	if err != nil {
		return nil, err
	}
	r := result(o, matchScore)
	r.Gate, r.Parts["valid"] = "valid", 0
	if v.Valid {
		r.Reward, r.Parts["valid"] = 1, 1
	} else {
		r.Gate, r.Parts[v.ErrorType] = v.ErrorType, 1
	}
	r.Terms = map[string]float64{"valid": r.Reward}
	return r, nil
}

// BFCLVerdict is BFCL's checker's decision on one response.
type BFCLVerdict struct {
	Valid     bool   `json:"valid"`
	ErrorType string `json:"error_type,omitempty"` // e.g. "simple_function_checker:missing_required"
	Error     string `json:"error,omitempty"`
}

// BFCLCheck scores a parsed response against the record's BFCL case as
// BFCL's AST checker does. The format must keep literal types
// (ParsedCall.Exact), as argrl's three formats do.
func BFCLCheck(rec *data.Record, p format.Parsed) (BFCLVerdict, error) {
	if rec.BFCL == nil {
		return BFCLVerdict{}, fmt.Errorf("record %s: no bfcl case (import BFCL data with `train data convert --from bfcl`)", rec.ID)
	}
	c, err := bfcl.ParseCase(rec.BFCL.Category, rec.BFCL.Functions, rec.BFCL.GroundTruth)
	if err != nil {
		return BFCLVerdict{}, fmt.Errorf("record %s: bfcl: %w", rec.ID, err)
	}
	calls := make([]bfcl.Call, 0, len(p.Calls))
	for _, pc := range p.Calls {
		if pc.Exact == nil {
			return BFCLVerdict{}, fmt.Errorf("record %s: the output format does not keep literal types, which the bfcl reward needs", rec.ID)
		}
		args, err := checkerValue(pc.Exact)
		if err != nil {
			return BFCLVerdict{}, fmt.Errorf("record %s: call %s: %w", rec.ID, pc.Name, err)
		}
		calls = append(calls, bfcl.Call{Name: pc.Name, Args: args.(*bfcl.Dict)})
	}
	r := c.Check(p.Valid, calls)
	return BFCLVerdict{Valid: r.Valid, ErrorType: r.ErrorType, Error: r.Error}, nil
}

// checkerValue turns an exact parsed value into the checker's.
func checkerValue(v any) (bfcl.Value, error) {
	switch x := v.(type) {
	case json.Number:
		return bfcl.Number(string(x))
	case *format.Object:
		d := bfcl.NewDict()
		for _, k := range x.Keys {
			e, err := checkerValue(x.Values[k])
			if err != nil {
				return nil, err
			}
			d.Set(k, e)
		}
		return d, nil
	case []any:
		return checkerList(x)
	case format.Tuple:
		l, err := checkerList(x)
		if err != nil {
			return nil, err
		}
		return bfcl.Tuple(l), nil
	case string, bool, nil, float64:
		return x, nil
	}
	return nil, fmt.Errorf("unexpected value %T", v)
}

func checkerList(x []any) ([]bfcl.Value, error) {
	out := make([]bfcl.Value, len(x))
	for i, e := range x {
		v, err := checkerValue(e)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}
