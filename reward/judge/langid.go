package judge

// Language identification for short values (a few words), over a small set
// of candidate languages. Three kinds of evidence add up per token:
//   - a character model: log P_L(^word$) under an interpolated 4-gram
//     model of language L's word list (ngrams.txt.gz, see gen_ngrams.go);
//     diacritics weigh in here, since a letter a language never uses gets
//     only the smoothed unigram probability;
//   - closed word classes (lexicon.go): +lexBonus for a word of L's list;
//   - place names (gazetteer.go): lexBonus for the languages writing the
//     name so and 0 for the others, instead of the character model;
//   - -lexBonus for a word holding a letter the language never writes
//     (any diacritic for English, ñ for Italian, ß for French);
//   - tokens carrying no language (numbers, short all-caps codes) count 0.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

//go:embed ngrams.txt.gz
var ngramsGz []byte

// Languages the builtin judge identifies.
var Languages = []string{"en", "es", "fr", "it", "nl", "de", "pt"}

const (
	maxOrder = 4   // longest n-gram in the model
	mu       = 5.0 // Dirichlet smoothing toward the shorter context
	alphabet = 100 // pseudo alphabet size of the unigram floor
	lexBonus = 6.0 // nats for a closed-class word of the language
)

// charModel is one language's n-gram counts.
type charModel struct {
	counts  map[string]int32
	unigram float64 // total count of 1-grams
}

var (
	modelsOnce sync.Once
	models     map[string]*charModel
	modelsErr  error
)

func loadModels() (map[string]*charModel, error) {
	modelsOnce.Do(func() {
		models, modelsErr = parseModels(ngramsGz)
	})
	return models, modelsErr
}

func parseModels(gz []byte) (map[string]*charModel, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("judge: n-gram table: %w", err)
	}
	out := map[string]*charModel{}
	sc := bufio.NewScanner(zr)
	line := 0
	for sc.Scan() {
		line++
		t := sc.Text()
		if strings.HasPrefix(t, "#") || t == "" {
			continue
		}
		f := strings.Split(t, "\t")
		if len(f) != 3 {
			return nil, fmt.Errorf("judge: n-gram table line %d: want 3 fields", line)
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, fmt.Errorf("judge: n-gram table line %d: %w", line, err)
		}
		m := out[f[0]]
		if m == nil {
			m = &charModel{counts: map[string]int32{}}
			out[f[0]] = m
		}
		if f[1] == "#words" {
			continue
		}
		m.counts[f[1]] = int32(n)
		if utf8.RuneCountInString(f[1]) == 1 {
			m.unigram += float64(n)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("judge: n-gram table: %w", err)
	}
	for _, l := range Languages {
		if out[l] == nil {
			return nil, fmt.Errorf("judge: n-gram table has no %q model", l)
		}
	}
	return out, nil
}

// logProb is log P(^word$) under the interpolated character model.
func (m *charModel) logProb(word string) float64 {
	rs := []rune("^" + word + "$")
	lp := 0.0
	for i := 1; i < len(rs); i++ {
		p := (float64(m.counts[string(rs[i])]) + 1) / (m.unigram + alphabet)
		for k := 1; k < maxOrder && i-k >= 0; k++ {
			h := string(rs[i-k : i])
			ch := float64(m.counts[h])
			if ch == 0 {
				break
			}
			p = (float64(m.counts[string(rs[i-k:i+1])]) + mu*p) / (ch + mu)
		}
		lp += math.Log(p)
	}
	return lp
}

// token is one word of a value, lower-cased, plus whether it carries
// language at all.
type token struct {
	text    string // lower-cased, NFC
	neutral bool   // digits or a short all-caps code: no language
}

// tokenize splits a value into words (letters, digits and inner
// apostrophes are dropped as separators).
func tokenize(s string) []token {
	s = norm.NFC.String(s)
	var toks []token
	var b strings.Builder
	flush := func() {
		if b.Len() == 0 {
			return
		}
		w := b.String()
		b.Reset()
		hasDigit, allUpper, letters := false, true, 0
		for _, r := range w {
			if unicode.IsDigit(r) {
				hasDigit = true
			}
			if unicode.IsLetter(r) {
				letters++
				if !unicode.IsUpper(r) {
					allUpper = false
				}
			}
		}
		code := allUpper && letters >= 2 && letters <= 4
		toks = append(toks, token{text: strings.ToLower(w), neutral: hasDigit || code})
	}
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) {
			b.WriteRune(r)
			continue
		}
		flush()
	}
	flush()
	return toks
}

// fold strips diacritics (é→e, ñ→n, ß→ss).
func fold(s string) string {
	var b strings.Builder
	for _, r := range norm.NFD.String(s) {
		switch {
		case unicode.Is(unicode.Mn, r):
		case r == 'ß':
			b.WriteString("ss")
		case r == 'œ':
			b.WriteString("oe")
		case r == 'æ':
			b.WriteString("ae")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// foldDE is the German transliteration (ä→ae, ö→oe, ü→ue, ß→ss).
func foldDE(s string) string {
	r := strings.NewReplacer("ä", "ae", "ö", "oe", "ü", "ue", "ß", "ss")
	return fold(r.Replace(s))
}

// tokenScore is token t's evidence for language l, in nats.
func tokenScore(ms map[string]*charModel, t token, l string) float64 {
	if t.neutral {
		return 0
	}
	if g := gazLangs[t.text]; g != nil {
		if g[l] {
			return lexBonus
		}
		return 0
	}
	s := ms[l].logProb(t.text)
	if lexSets[l][t.text] {
		s += lexBonus
	}
	// A letter the language's spelling never uses (any diacritic for
	// English, ñ for Italian, ß for French, ...).
	for _, r := range t.text {
		if r > unicode.MaxASCII && unicode.IsLetter(r) && !strings.ContainsRune(letters[l], r) {
			s -= lexBonus
			break
		}
	}
	return s
}

// letters are the non-ASCII letters of each language's spelling.
var letters = map[string]string{
	"en": "",
	"es": "áéíóúñü",
	"fr": "àâçéèêëîïôûùüÿœæ",
	"it": "àèéìíòóùúî",
	"nl": "áéèëïóöüú",
	"de": "äöüß",
	"pt": "áâãàçéêíóôõúü",
}

// scores sums the evidence of the non-neutral tokens per candidate
// language; n counts the tokens that carried language.
func scores(ms map[string]*charModel, toks []token, cands []string) (map[string]float64, int) {
	out := make(map[string]float64, len(cands))
	n := 0
	for _, t := range toks {
		if t.neutral {
			continue
		}
		// A single letter carries language only as a closed-class word.
		if utf8.RuneCountInString(t.text) < 2 && !inAnyLexicon(t.text, cands) {
			continue
		}
		n++
		for _, l := range cands {
			out[l] += tokenScore(ms, t, l)
		}
	}
	return out, n
}

func inAnyLexicon(w string, cands []string) bool {
	for _, l := range cands {
		if lexSets[l][w] {
			return true
		}
	}
	return false
}
