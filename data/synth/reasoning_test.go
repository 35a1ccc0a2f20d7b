package synth

import (
	"strings"
	"testing"

	"github.com/argrl/argrl/data"
)

// Every modification document has a hint: a new Kind without one would
// write a reasoning sentence without its gist.
func TestModHintCoversEveryKind(t *testing.T) {
	for k := Free; k <= Time; k++ {
		for _, lang := range Langs {
			mod := modification(Arg{Name: "x", Kind: k}, lang)
			if modHint(mod) == "" {
				t.Errorf("kind %d, %s: no hint for %q", k, lang, mod)
			}
		}
	}
}

func TestReasoningOfHandMade(t *testing.T) {
	rec := data.Record{
		Calls: []data.Call{{Name: "search_news", Arguments: map[string]any{"topic": "elecciones", "date": "2026-07-31", "n": 3.0}}},
		SMV: []map[string]data.SMVDoc{{
			"topic": {Spec: "News topic", Mod: "Copy the user's words, in the user's language (Spanish); do not translate."},
			"date":  {Spec: "Date", Mod: "Copy the value unchanged."},
		}},
	}
	want := "search_news. date is 2026-07-31, unchanged. n is 3. topic is elecciones, user's words."
	if got := reasoningOf(&rec); got != want {
		t.Errorf("reasoning\n got %q\nwant %q", got, want)
	}
	rej := data.Record{Calls: []data.Call{}, RejectReason: "No available tool can send a fax."}
	if got := reasoningOf(&rej); got != rej.RejectReason {
		t.Errorf("no-call reasoning %q, want the reject_reason", got)
	}
}

// --reasoning: every train, validation and test record has a reasoning,
// the training records their smv documents; without it nothing changes.
func TestGenerateReasoning(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Train, cfg.Val, cfg.Test, cfg.Base = 40, 10, 10, 0
	plain, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Reasoning = true
	o, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range o.Files() {
		for i, r := range f.Recs {
			if r.Reasoning == "" {
				t.Fatalf("%s %s: no reasoning", f.Name, r.ID)
			}
			if len(r.Calls) > 0 && len(r.SMV) != len(r.Calls) {
				t.Errorf("%s %s: %d smv documents for %d calls", f.Name, r.ID, len(r.SMV), len(r.Calls))
			}
			for _, c := range r.Calls {
				if !strings.Contains(r.Reasoning, c.Name+".") {
					t.Errorf("%s %s: reasoning %q does not name %s", f.Name, r.ID, r.Reasoning, c.Name)
				}
			}
			p := plain.Files()
			for j := range p {
				if p[j].Name == f.Name {
					q := p[j].Recs[i]
					if q.ID != r.ID || q.Messages[0].Content != r.Messages[0].Content {
						t.Errorf("%s %s: --reasoning changed the record itself", f.Name, r.ID)
					}
				}
			}
		}
	}
	for _, r := range plain.Train {
		if r.Reasoning != "" || len(r.SMV) > 0 {
			t.Fatalf("without --reasoning, train record %s has reasoning or smv", r.ID)
		}
	}
}
