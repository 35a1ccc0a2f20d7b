package bpetrain

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/argrl/argrl/model/tokenizer"
)

var update = flag.Bool("update", false, "rewrite testdata/tokenizer.json, tokenizer_config.json and texts.json (then run testdata/gen_expected.mjs)")

// TestOracle checks a committed tokenizer trained by this package against
// Hugging Face's own tokenizers library (ids recorded by
// testdata/gen_expected.mjs): this package's encoder and argrl's loader must
// both give HF's ids, and HF's decoding.
func TestOracle(t *testing.T) {
	if *update {
		texts := corpus(t)
		tok, err := Train(texts, Config{VocabSize: 1024})
		if err != nil {
			t.Fatal(err)
		}
		if err := tok.WriteDir("testdata", 2048); err != nil {
			t.Fatal(err)
		}
		var sample []string
		for i := 0; i < len(texts); i += len(texts) / 24 {
			sample = append(sample, texts[i])
		}
		b, err := json.MarshalIndent(append(sample, extra...), "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("testdata", "texts.json"), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("rewrote testdata; now run: node model/tokenizer/bpetrain/testdata/gen_expected.mjs")
		return
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exp struct {
		Cases []struct {
			Text    string `json:"text"`
			IDs     []int  `json:"ids"`
			Decoded string `json:"decoded"`
			JSIDs   []int  `json:"js_ids"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &exp); err != nil {
		t.Fatal(err)
	}
	if len(exp.Cases) < 20 {
		t.Fatalf("expected.json has %d cases", len(exp.Cases))
	}
	own, err := Load(filepath.Join("testdata", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	hf, err := tokenizer.Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range exp.Cases {
		if c.JSIDs != nil {
			t.Logf("transformers.js differs from HF on %.60q (HF is followed)", c.Text)
		}
		got := own.Encode(c.Text)
		if len(got) != len(c.IDs) || (len(got) > 0 && !equalInts(got, c.IDs)) {
			t.Fatalf("bpetrain ids differ from HF on %.80q:\n got %v\nwant %v", c.Text, got, c.IDs)
		}
		ids32, _ := hf.Encode(c.Text, false)
		if len(ids32) != len(c.IDs) {
			t.Fatalf("model/tokenizer gives %d ids on %.80q, HF %d", len(ids32), c.Text, len(c.IDs))
		}
		for i, id := range ids32 {
			if int(id) != c.IDs[i] {
				t.Fatalf("model/tokenizer id %d differs from HF on %.80q", i, c.Text)
			}
		}
		if dec, err := own.Decode(c.IDs); err != nil || dec != c.Decoded {
			t.Fatalf("decode of %.80q: got %q (%v), HF %q", c.Text, dec, err, c.Decoded)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
