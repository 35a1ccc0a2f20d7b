package bpetrain

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/data/synth"
	"github.com/argrl/argrl/model/chat"
	"github.com/argrl/argrl/model/tokenizer"
)

func TestPretokenize(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"Hello world", []string{"Hello", " world"}},
		{"  hi", []string{" ", " hi"}},
		{"a  ", []string{"a", "  "}},
		{"it's WE'LL", []string{"it", "'s", " WE", "'LL"}},
		{"2025-03-14", []string{"2", "0", "2", "5", "-", "0", "3", "-", "1", "4"}},
		{`{"name": "x"}`, []string{`{"`, "name", `":`, ` "`, "x", `"}`}},
		{"hola\n\n  mundo", []string{"hola", "\n\n", " ", " mundo"}},
		{"a \n b", []string{"a", " \n", " b"}},
		{"¿Qué tal?", []string{"¿Qué", " tal", "?"}},
		{"x\t\ty", []string{"x", "\t", "\ty"}},
		{"ok.\n\nNext", []string{"ok", ".\n\n", "Next"}},
		{"   \n", []string{"   \n"}},
		{"a , b", []string{"a", " ,", " b"}},
	}
	for _, c := range cases {
		got := pretokenize(c.in)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("pretokenize(%q) = %q, want %q", c.in, got, c.want)
		}
		if strings.Join(got, "") != c.in {
			t.Errorf("pieces of %q do not tile it", c.in)
		}
	}
}

// TestTrainWorkedExample follows the algorithm by hand on "low lower
// lowest": pieces low, Ġlower, Ġlowest. (l,o) and (o,w) occur 3 times; the
// tie goes to the smaller ids, (l,o). Then (lo,w) 3; then (Ġ,low) and
// (low,e) tie at 2 and Ġ (id 220) < low (id 257); then (Ġlow,e) 2; every
// other pair occurs once, below MinFrequency 2.
func TestTrainWorkedExample(t *testing.T) {
	tok, err := Train([]string{"low lower lowest"}, Config{VocabSize: 1000, MinFrequency: 2, Added: []AddedToken{}})
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]string{{"l", "o"}, {"lo", "w"}, {"Ġ", "low"}, {"Ġlow", "e"}}
	if !reflect.DeepEqual(tok.Merges, want) {
		t.Fatalf("merges %q, want %q", tok.Merges, want)
	}
	if got := tok.Encode(" lowest low"); !reflect.DeepEqual(decodeEach(t, tok, got), []string{" lowe", "s", "t", " low"}) {
		t.Errorf("encode: %q", decodeEach(t, tok, got))
	}
}

func decodeEach(t *testing.T, tok *Tokenizer, ids []int) []string {
	var out []string
	for _, id := range ids {
		s, err := tok.Decode([]int{id})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// corpus renders a small generated benchmark exactly as training sees it.
func corpus(t *testing.T) []string {
	t.Helper()
	cfg := synth.DefaultConfig()
	cfg.Train, cfg.Val, cfg.Test, cfg.Base = 150, 0, 10, 600
	out, err := synth.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := chat.Get("qwen2.5")
	if err != nil {
		t.Fatal(err)
	}
	f, err := format.Get("tool_call", format.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, recs := range [][]data.Record{out.Base, out.Train, out.TestLearn} {
		for _, r := range recs {
			rd, err := tmpl.Render(r, f, true)
			if err != nil {
				t.Fatal(err)
			}
			texts = append(texts, rd.Text)
		}
	}
	return texts
}

var extra = []string{
	"Ça coûte 12,50 € — très cher!", "naïve façade, smörgåsbord, Ærø", "日本語のテキスト", "emoji 🎉🚀 ok",
	"tabs\tand\r\nwindows lines", "   leading and trailing   ", "e\u0301 (decomposed é)", "<|im_start|>user\nhi<|im_end|>",
	"x<tool_call>{\"a\": 1}</tool_call>y", "",
}

func TestDeterministicAndRoundTrip(t *testing.T) {
	texts := corpus(t)
	cfg := Config{VocabSize: 1024}
	a, err := Train(texts, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rev := append([]string(nil), texts...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	b, err := Train(rev, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.TokenizerJSON(), b.TokenizerJSON()) {
		t.Fatal("training on the same texts in another order gave another tokenizer")
	}
	if a.Size() != cfg.VocabSize {
		t.Errorf("vocabulary %d, want %d", a.Size(), cfg.VocabSize)
	}
	for _, s := range append(texts, extra...) {
		ids := a.Encode(s)
		got, err := a.Decode(ids)
		if err != nil {
			t.Fatal(err)
		}
		if want := norm.NFC.String(s); got != want {
			t.Fatalf("decode(encode(%q)) = %q", want, got)
		}
	}
	if _, err := Train(texts, Config{VocabSize: 200}); err == nil {
		t.Error("a vocabulary smaller than the byte alphabet was accepted")
	}
}

// TestLoadsWithModelTokenizer writes the files, loads them with argrl's
// tokenizer (an independent implementation of the same HF pipeline) and
// checks it gives this package's ids on the corpus, the ChatML specials at
// the right ids, and the exact text back.
func TestLoadsWithModelTokenizer(t *testing.T) {
	texts := corpus(t)
	own, err := Train(texts, Config{VocabSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := own.WriteDir(dir, 2048); err != nil {
		t.Fatal(err)
	}
	hf, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if hf.VocabSize() != own.Size() {
		t.Fatalf("loader vocabulary %d, trainer %d", hf.VocabSize(), own.Size())
	}
	for i, a := range own.Added {
		id, ok := hf.TokenID(a.Content)
		if !ok || int(id) != len(own.Vocab)+i || hf.IsSpecial(id) != a.Special {
			t.Errorf("added token %q: loader id %d ok=%v special=%v", a.Content, id, ok, hf.IsSpecial(id))
		}
	}
	if im, _ := hf.TokenID("<|im_end|>"); hf.EOS() != im {
		t.Errorf("eos %d, want <|im_end|> = %d", hf.EOS(), im)
	}
	for _, s := range append(texts, extra...) {
		ids32, _ := hf.Encode(s, false)
		ids := make([]int, len(ids32))
		for i, id := range ids32 {
			ids[i] = int(id)
		}
		if want := own.Encode(s); len(want) != len(ids) || (len(ids) > 0 && !reflect.DeepEqual(ids, want)) {
			t.Fatalf("ids differ on %q:\nloader  %v\ntrainer %v", s, ids, want)
		}
		if got := hf.Decode(ids32, false); got != norm.NFC.String(s) {
			t.Fatalf("loader round trip of %q gave %q", s, got)
		}
	}

	// Reading our own file back gives the same tokenizer.
	back, err := Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Vocab, own.Vocab) || !reflect.DeepEqual(back.Merges, own.Merges) || !reflect.DeepEqual(back.Added, own.Added) {
		t.Error("Load(tokenizer.json) differs from the trained tokenizer")
	}

	// The layout is Qwen2's.
	var f struct {
		Normalizer   struct{ Type string }
		PreTokenizer struct {
			Type          string
			Pretokenizers []struct {
				Type    string
				Pattern struct{ Regex string }
			}
		} `json:"pre_tokenizer"`
		Decoder struct{ Type string }
		Model   struct{ Type string }
	}
	if err := json.Unmarshal(own.TokenizerJSON(), &f); err != nil {
		t.Fatal(err)
	}
	if f.Normalizer.Type != "NFC" || f.PreTokenizer.Type != "Sequence" || len(f.PreTokenizer.Pretokenizers) != 2 ||
		f.PreTokenizer.Pretokenizers[0].Pattern.Regex != QwenPattern || f.PreTokenizer.Pretokenizers[1].Type != "ByteLevel" ||
		f.Decoder.Type != "ByteLevel" || f.Model.Type != "BPE" {
		t.Errorf("tokenizer.json layout: %+v", f)
	}
}

// TestIsolatePrefix: with IsolatePrefix a word after a space or an opening
// quote gets the prefix's tokens followed by exactly the tokens of the bare
// word (as after a JSON quote), in this package and in argrl's loader; the
// default training does merge the space into words.
func TestIsolatePrefix(t *testing.T) {
	texts := corpus(t)
	iso, err := Train(texts, Config{VocabSize: 1024, IsolatePrefix: true})
	if err != nil {
		t.Fatal(err)
	}
	def, err := Train(texts, Config{VocabSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := iso.WriteDir(dir, 2048); err != nil {
		t.Fatal(err)
	}
	hf, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	encode := func(s string) []int {
		ids32, _ := hf.Encode(s, false)
		ids := make([]int, len(ids32))
		for i, id := range ids32 {
			ids[i] = int(id)
		}
		if own := iso.Encode(s); !reflect.DeepEqual(own, ids) {
			t.Fatalf("loader and trainer differ on %q: %v vs %v", s, ids, own)
		}
		return ids
	}
	words := []string{"comida", "reunión", "swimming", "zalm", "café", "Zürich", "fotos", "ventanas"}
	defaultMerges := 0
	for _, w := range words {
		bare := encode(w)
		for _, prefix := range []string{" ", "«", "\"", "¿"} {
			got := encode(prefix + w)
			pre := encode(prefix)
			if want := append(append([]int{}, pre...), bare...); !reflect.DeepEqual(got, want) {
				t.Errorf("%q: %v, want prefix %v + bare %v", prefix+w, got, pre, bare)
			}
		}
		if d := def.Encode(" " + w); len(d) == len(def.Encode(w)) {
			defaultMerges++ // the space joined the word's first token
		}
	}
	if defaultMerges == 0 {
		t.Error("default training never merged the space into these words: the test shows nothing")
	}
	for _, s := range texts[:50] {
		encode(s)
	}
}
