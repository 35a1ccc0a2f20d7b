package synth

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/argrl/argrl/data"
)

// R2IF's reasoning in the synthetic benchmark (train data synth
// --reasoning): a short gold <reason> text per record, written from the
// record's own ground truth so that SFT can teach a tiny model the
// reason_tool format with a reasoning worth scoring.
//
//	a call         "<tool>. <arg> is <value>, <hint>. …" for each gold
//	               argument in name order, the hint a few words of the
//	               argument's modification document (how the value derives
//	               from the user's words; modHint), one sentence per
//	               argument, so that R2IF's SMV finds each argument's
//	               snippet by its name. Short, because every token of it is
//	               generated at every rollout.
//	no call        the record's reject_reason
//
// The reasoning states every gold value, so a student that continues after
// it can copy the call: the CER of the gold reasoning is high by design.

// addReasoning sets Reasoning on every record of recs.
func addReasoning(recs []data.Record) {
	for i := range recs {
		recs[i].Reasoning = reasoningOf(&recs[i])
	}
}

func reasoningOf(rec *data.Record) string {
	if len(rec.Calls) == 0 {
		return rec.RejectReason
	}
	var b strings.Builder
	for i, c := range rec.Calls {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c.Name)
		b.WriteByte('.')
		names := make([]string, 0, len(c.Arguments))
		for n := range c.Arguments {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(&b, " %s is %s", n, valueText(c.Arguments[n]))
			if i < len(rec.SMV) {
				if h := modHint(rec.SMV[i][n].Mod); h != "" {
					b.WriteString(", ")
					b.WriteString(h)
				}
			}
			b.WriteByte('.')
		}
	}
	return b.String()
}

// valueText writes a gold value as the call's JSON does, strings unquoted.
func valueText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	j, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(j)
}

// modHints shorten each modification document (modification in
// realize.go) to its gist, by the document's opening words.
var modHints = []struct{ prefix, hint string }{
	{"Copy the user's words", "user's words"},
	{"Write the name as the user wrote it", "as written"},
	{"Write the English name", "in English"},
	{"Map the user's words to the enum value", "enum value"},
	{"Copy the identifier unchanged", "unchanged"},
	{"Copy the value unchanged", "unchanged"},
}

// modHint is the hint of a modification document ("" for none).
func modHint(mod string) string {
	for _, h := range modHints {
		if strings.HasPrefix(mod, h.prefix) {
			return h.hint
		}
	}
	return ""
}
