package rl

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/model/chat"
	"github.com/argrl/argrl/model/tokenizer"
	"github.com/argrl/argrl/model/tokenizer/tokenizertest"
	"github.com/argrl/argrl/reward"
)

func TestTokenWeightsOverlap(t *testing.T) {
	// text: {"a": "xyz", "n": 12}
	//        0123456789012345678901
	// value spans: "xyz" content [7,10), 12 at [18,20).
	offs := [][2]int{{0, 2}, {2, 3}, {3, 6}, {6, 8}, {8, 10}, {10, 11}, {11, 18}, {18, 19}, {19, 20}, {20, 21}, {21, 21}}
	spans := [][2]int{{18, 20}, {7, 10}, {15, 15}} // unsorted, plus an empty value
	w := TokenWeights(offs, spans, 3)
	want := []float32{1, 1, 1, 3, 3, 1, 1, 3, 3, 1, 1}
	for i := range want {
		if w[i] != want[i] {
			t.Fatalf("weights %v, want %v", w, want)
		}
	}
	// β = 1 is the identity; no spans leave every weight 1.
	for _, w := range [][]float32{TokenWeights(offs, spans, 1), TokenWeights(offs, nil, 3)} {
		for _, x := range w {
			if x != 1 {
				t.Fatalf("weights %v, want all 1", w)
			}
		}
	}
	a := WeightAdvantage(-0.5, TokenWeights(offs, spans, 1.5))
	if a[0] != -0.5 || a[3] != -0.75 {
		t.Fatalf("weighted advantages %v", a)
	}
}

// The mask on a rendered example: the Qwen3 chat template, the tool_call
// format, the real Qwen3 tokenizer. The response is tokenized, decoded
// with offsets (as the rollout does), scored by RM-3 (whose parser gives
// the value spans), and weighted: exactly the tokens of the argument
// values change, and every weighted token's text lies in a value.
func TestTokenWeightsRenderedExample(t *testing.T) {
	tok, err := tokenizer.Load(tokenizertest.ModelDir(t, "qwen3"))
	if err != nil {
		t.Fatal(err)
	}
	rec := currencyRecord(t)
	f, err := format.Get("tool_call", format.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := chat.Get("qwen3")
	if err != nil {
		t.Fatal(err)
	}
	r, err := tmpl.Render(rec, f, true)
	if err != nil {
		t.Fatal(err)
	}
	// A response with the Spanish values (paper 000 Table 1's first row).
	resp := strings.ReplaceAll(r.Target, "dollars", "dólares")
	ids, _ := tok.Encode(resp, false)
	text, offs := tok.DecodeOffsets(ids, false)
	if text != resp {
		t.Fatalf("decode %q != %q", text, resp)
	}
	rm, err := reward.Get("rm3", reward.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	res, err := rm.Score(context.Background(), &rec, strings.TrimSuffix(text, "<|im_end|>"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Spans) != 6 {
		t.Fatalf("RM-3 gave %d value spans, want 6 (3 arguments × 2 calls): %v", len(res.Spans), res.Spans)
	}
	w := TokenWeights(offs, res.Spans, 3)
	var mask strings.Builder
	var inValues []string
	for i, o := range offs {
		piece := text[o[0]:o[1]]
		if w[i] == 3 {
			mask.WriteString("[" + piece + "]")
			inValues = append(inValues, piece)
			inside := false
			for _, s := range res.Spans {
				if o[0] < s[1] && s[0] < o[1] {
					inside = true
				}
			}
			if !inside {
				t.Errorf("token %d %q weighted outside every value", i, piece)
			}
		} else {
			mask.WriteString(piece)
			if w[i] != 1 {
				t.Errorf("token %d weight %v", i, w[i])
			}
		}
	}
	t.Logf("β = 3 on [bracketed] tokens:\n%s", mask.String())
	joined := strings.Join(inValues, "")
	for _, v := range []string{"15000", "euro", "dólares", "200", "libras"} {
		if !strings.Contains(joined, v) {
			t.Errorf("value %q not covered by weighted tokens %q", v, inValues)
		}
	}
	for _, bad := range []string{"name", "arguments", "amount", "tool_call", "get_conversion_cost"} {
		if strings.Contains(joined, bad) {
			t.Errorf("weighted tokens %q include %q", inValues, bad)
		}
	}
}

// currencyRecord is paper 000 Figure 1's example in the common schema.
func currencyRecord(t *testing.T) data.Record {
	t.Helper()
	const js = `{"id":"es-1","lang":"es",
 "tools":[{"name":"get_conversion_cost","description":"Convert an amount between currencies",
   "parameters":{"type":"object","properties":{"amount":{"type":"number"},"from_currency":{"type":"string"},"to_currency":{"type":"string"}},
   "required":["amount","from_currency","to_currency"]}}],
 "messages":[{"role":"user","content":"¿Cuánto costará en dólares si transfiero 15000 euro a dólares? ¿y si convierto 200 libras a dólares?"}],
 "calls":[{"name":"get_conversion_cost","arguments":{"amount":15000,"from_currency":"euro","to_currency":"dollars"}},
          {"name":"get_conversion_cost","arguments":{"amount":200,"from_currency":"libras","to_currency":"dollars"}}]}`
	var rec data.Record
	if err := json.Unmarshal([]byte(js), &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}
