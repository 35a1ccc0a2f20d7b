//go:build ignore

// gen_ngrams builds ngrams.txt.gz, the character n-gram counts behind the
// builtin judge's language identifier, from the Debian word lists
// (packages wamerican, wspanish, wfrench, witalian, wdutch, wngerman,
// wportuguese; `apt-get download` them and `dpkg-deb -x` each into DIR):
//
//	go run gen_ngrams.go -dict DIR/usr/share/dict -out ngrams.txt.gz
//
// Only aggregate counts of n-grams (n = 1..4, words padded with ^ and $)
// are kept, never the words themselves. Counts below -min are dropped.
package main

import (
	"bufio"
	"compress/gzip"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
)

var lists = []struct{ lang, file string }{
	{"en", "american-english"}, {"es", "spanish"}, {"fr", "french"},
	{"it", "italian"}, {"nl", "dutch"}, {"de", "ngerman"}, {"pt", "portuguese"},
}

func main() {
	dict := flag.String("dict", "/usr/share/dict", "folder holding the word lists")
	out := flag.String("out", "ngrams.txt.gz", "output file")
	maxN := flag.Int("n", 4, "longest n-gram")
	perMillion := flag.Float64("min", 30, "drop n-grams seen fewer times than this per million words (at least twice)")
	flag.Parse()
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	zw := gzip.NewWriter(f)
	w := bufio.NewWriter(zw)
	fmt.Fprintf(w, "# character n-gram counts (n<=%d, min %g per million words) of the Debian word lists; see gen_ngrams.go\n", *maxN, *perMillion)
	for _, l := range lists {
		counts, words, err := count(filepath.Join(*dict, l.file), l.lang, *maxN)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		minCount := int(math.Ceil(*perMillion * float64(words) / 1e6))
		if minCount < 2 {
			minCount = 2
		}
		keys := make([]string, 0, len(counts))
		for g, c := range counts {
			if c >= minCount {
				keys = append(keys, g)
			}
		}
		sort.Strings(keys)
		fmt.Fprintf(w, "%s\t#words\t%d\n", l.lang, words)
		for _, g := range keys {
			fmt.Fprintf(w, "%s\t%s\t%d\n", l.lang, g, counts[g])
		}
		fmt.Fprintf(os.Stderr, "%s: %d words, %d n-grams kept of %d\n", l.lang, words, len(keys), len(counts))
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := zw.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func count(path, lang string, maxN int) (map[string]int, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	counts := map[string]int{}
	words := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		word := strings.TrimSpace(sc.Text())
		if word == "" || strings.ContainsAny(word, "'-. 0123456789") {
			continue
		}
		r0 := []rune(word)[0]
		// Capitalised entries are proper names, except German nouns.
		if unicode.IsUpper(r0) && lang != "de" {
			continue
		}
		word = strings.ToLower(word)
		ok := true
		for _, r := range word {
			if !unicode.IsLetter(r) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		forms := []string{word}
		switch lang {
		case "es":
			forms = append(forms, inflectES(word)...)
		case "it":
			forms = append(forms, inflectIT(word)...)
		}
		for _, w := range forms {
			words++
			rs := []rune("^" + w + "$")
			for n := 1; n <= maxN; n++ {
				for i := 0; i+n <= len(rs); i++ {
					counts[string(rs[i:i+n])]++
				}
			}
		}
	}
	return counts, words, sc.Err()
}

// The Spanish and Italian lists hold lemmas only (no plurals, no verb
// forms), unlike the others. inflectES and inflectIT add the regular
// plural, feminine and the commonest verb forms by spelling rules, so
// that every model sees inflected words.
func inflectES(w string) []string {
	cut := func(n int) string { r := []rune(w); return string(r[:len(r)-n]) }
	var out []string
	for _, v := range []struct{ inf, ger, part, pres string }{{"ar", "ando", "ad", "a"}, {"er", "iendo", "id", "e"}, {"ir", "iendo", "id", "e"}} {
		if strings.HasSuffix(w, v.inf) && len(w) > 3 {
			s := cut(2)
			out = append(out, s+v.ger, s+v.part+"o", s+v.part+"a", s+v.part+"os", s+v.part+"as",
				s+v.pres, s+v.pres+"n", s+v.pres+"s", s+"o", s+v.inf[:1]+"mos", w+"é", w+"á")
		}
	}
	switch {
	case strings.HasSuffix(w, "ión"):
		out = append(out, cut(3)+"iones")
	case strings.HasSuffix(w, "án"), strings.HasSuffix(w, "én"), strings.HasSuffix(w, "ín"), strings.HasSuffix(w, "ón"), strings.HasSuffix(w, "és"):
		r := []rune(w)
		out = append(out, string(r[:len(r)-2])+fold(string(r[len(r)-2]))+string(r[len(r)-1])+"es")
	case strings.HasSuffix(w, "z"):
		out = append(out, cut(1)+"ces")
	case strings.HasSuffix(w, "o"):
		out = append(out, w+"s", cut(1)+"a", cut(1)+"as")
	case strings.HasSuffix(w, "s"), strings.HasSuffix(w, "x"):
	case strings.HasSuffix(w, "í"), strings.HasSuffix(w, "ú"):
		out = append(out, w+"es")
	case strings.ContainsAny(w[len(w)-1:], "aeiou") || strings.HasSuffix(w, "á") || strings.HasSuffix(w, "é") || strings.HasSuffix(w, "ó"):
		out = append(out, w+"s")
	default:
		out = append(out, w+"es")
	}
	return out
}

func inflectIT(w string) []string {
	cut := func(n int) string { r := []rune(w); return string(r[:len(r)-n]) }
	var out []string
	switch {
	case strings.HasSuffix(w, "are") && len(w) > 4:
		s := cut(3)
		out = append(out, s+"ando", s+"ato", s+"ata", s+"ati", s+"ate", s+"a", s+"ano", s+"iamo", s+"o")
	case strings.HasSuffix(w, "ere") && len(w) > 4:
		s := cut(3)
		out = append(out, s+"endo", s+"uto", s+"uta", s+"e", s+"ono", s+"iamo", s+"o")
	case strings.HasSuffix(w, "ire") && len(w) > 4:
		s := cut(3)
		out = append(out, s+"endo", s+"ito", s+"ita", s+"e", s+"ono", s+"iamo", s+"o")
	case strings.HasSuffix(w, "co"):
		out = append(out, cut(1)+"hi", cut(1)+"i", cut(1)+"a", cut(1)+"he")
	case strings.HasSuffix(w, "go"):
		out = append(out, cut(1)+"hi", cut(1)+"a", cut(1)+"he")
	case strings.HasSuffix(w, "ca"), strings.HasSuffix(w, "ga"):
		out = append(out, cut(1)+"he")
	case strings.HasSuffix(w, "io"):
		out = append(out, cut(1), cut(1)+"a", cut(1)+"e")
	case strings.HasSuffix(w, "o"):
		out = append(out, cut(1)+"i", cut(1)+"a", cut(1)+"e")
	case strings.HasSuffix(w, "a"):
		out = append(out, cut(1)+"e")
	case strings.HasSuffix(w, "e"):
		out = append(out, cut(1)+"i")
	}
	return out
}

// fold drops a diacritic from one vowel (for plural stress shifts).
func fold(s string) string {
	return strings.NewReplacer("á", "a", "é", "e", "í", "i", "ó", "o", "ú", "u").Replace(s)
}
