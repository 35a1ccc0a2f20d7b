package synth

import (
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// The benchmark's data are embedded files next to this one, split by what
// they hold:
//
//	languages.json           per language: its name, the word joining two requests, the politeness prefixes
//	lexicon/free.tsv         free-form user text (reminders, dishes, messages, ...), translated
//	lexicon/named.tsv        named entities (cities, currencies), translated
//	lexicon/enum.tsv         enum values with the words users say for them, translated
//	lexicon/identifiers.tsv  identifier pools (contacts, restaurants, e-mail addresses, paths), never translated
//	apis/NN-domain.json      the APIs of one domain, NN (01, 02, ...) giving the domains' order
//	chains.json              the multi-turn dialogues: requests that need 2-4 dependent calls (chains.go)
//
// A lexicon file is tab-separated: a header row naming the columns, then one
// entry a line; blank lines and lines starting with # are comments. Every
// cell is non-empty, NFC, without surrounding spaces or braces. The first
// column is the category (or pool); named.tsv and enum.tsv then give the key,
// what an enum or code-valued argument stores (free.tsv's key is the English
// form); the other columns are the surface forms in Langs order.
//
// An API file is a JSON array of APIs (see apiJSON). The descriptions are
// what the model reads in the tool list; they decide the language of named
// entities ("in English" or "as written by the user"). Each template gives
// one utterance in every language, all mentioning the same arguments as
// {name}; a "?" at the end marks a question.
//
// loadTables checks all of it and names the file and line of a bad entry.

//go:embed languages.json lexicon/*.tsv apis/*.json chains.json
var tableFS embed.FS

// tables is the loaded benchmark data.
type tables struct {
	glue     map[string]langGlue
	free     map[string][]Entry // free-form categories
	named    map[string][]Entry // named-entity categories
	enum     map[string][]Entry // enum categories
	freeCats []string           // free-form categories in file order
	ids      map[string][]string
	apis     []*API
	chains   []*chain // multi-turn dialogues (chains.go)
}

// langGlue is one language's entry of languages.json.
type langGlue struct {
	Lang     string   `json:"lang"`
	Name     string   `json:"name"`     // English name, used in SMV documents
	And      string   `json:"and"`      // joins the two requests of a parallel case
	Prefixes []string `json:"prefixes"` // politeness prefixes, the same count in every language
}

// builtin is the embedded data; builtinErr says why it did not load (the
// tables are then empty and Generate returns the error).
var builtin, builtinErr = loadBuiltin()

func loadBuiltin() (*tables, error) {
	t, err := loadTables(tableFS)
	if err != nil {
		return &tables{}, fmt.Errorf("synth: built-in tables: %w", err)
	}
	return t, nil
}

// loadTables reads and checks the data files of fsys (laid out as tableFS).
func loadTables(fsys fs.FS) (*tables, error) {
	t := &tables{free: map[string][]Entry{}, named: map[string][]Entry{}, enum: map[string][]Entry{}, ids: map[string][]string{}}
	var err error
	if t.glue, err = loadGlue(fsys, "languages.json"); err != nil {
		return nil, err
	}
	defined := map[string]string{} // category → "file:line" of its first entry
	for _, f := range []struct {
		name    string
		m       map[string][]Entry
		withKey bool
	}{{"lexicon/free.tsv", t.free, false}, {"lexicon/named.tsv", t.named, true}, {"lexicon/enum.tsv", t.enum, true}} {
		cats, err := loadLexicon(fsys, f.name, f.withKey, f.m, defined)
		if err != nil {
			return nil, err
		}
		if f.name == "lexicon/free.tsv" {
			t.freeCats = cats
		}
	}
	if err := loadIdentifiers(fsys, "lexicon/identifiers.tsv", t.ids); err != nil {
		return nil, err
	}
	if t.apis, err = loadAPIs(fsys); err != nil {
		return nil, err
	}
	if err := t.checkAPIs(t.apis); err != nil {
		return nil, err
	}
	if t.chains, err = loadChains(fsys, "chains.json", t.apis); err != nil {
		return nil, err
	}
	return t, nil
}

// at formats a position: file:line.
func at(file string, line int) string { return fmt.Sprintf("%s:%d", file, line) }

var catNameRE = regexp.MustCompile(`^[a-z][a-z_]*$`)

// tsvRow is one data line of a tab-separated file.
type tsvRow struct {
	line  int
	cells []string
}

// readTSV returns the data rows of a tab-separated file whose header row is
// header, each checked to have that many valid cells.
func readTSV(fsys fs.FS, name string, header []string) ([]tsvRow, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	var rows []tsvRow
	sawHeader := false
	for i, l := range strings.Split(string(b), "\n") {
		if l == "" || l[0] == '#' {
			continue
		}
		cells := strings.Split(l, "\t")
		if !sawHeader {
			if strings.Join(cells, "\t") != strings.Join(header, "\t") {
				return nil, fmt.Errorf("%s: header row %q, want %q", at(name, i+1), cells, header)
			}
			sawHeader = true
			continue
		}
		if len(cells) != len(header) {
			return nil, fmt.Errorf("%s: %d columns, want %d (%s)", at(name, i+1), len(cells), len(header), strings.Join(header, ", "))
		}
		for j, c := range cells {
			if why := badCell(c); why != "" {
				return nil, fmt.Errorf("%s: column %s: %q is %s", at(name, i+1), header[j], c, why)
			}
		}
		if !catNameRE.MatchString(cells[0]) {
			return nil, fmt.Errorf("%s: %s %q is not a lower-case name", at(name, i+1), header[0], cells[0])
		}
		rows = append(rows, tsvRow{line: i + 1, cells: cells})
	}
	if !sawHeader {
		return nil, fmt.Errorf("%s: no header row", name)
	}
	return rows, nil
}

// badCell says what is wrong with a lexicon cell ("" if nothing).
func badCell(s string) string {
	switch {
	case s == "":
		return "empty"
	case strings.TrimSpace(s) != s:
		return "padded with spaces"
	case !norm.NFC.IsNormalString(s):
		return "not in Unicode NFC"
	case strings.ContainsAny(s, "{}"):
		return "holding a brace (templates use them for slots)"
	}
	return ""
}

// loadLexicon adds the categories of one lexicon file to m and returns them
// in file order. withKey: the file has a key column (else the key is the
// English form). defined tracks categories across files.
func loadLexicon(fsys fs.FS, name string, withKey bool, m map[string][]Entry, defined map[string]string) ([]string, error) {
	header := []string{"category"}
	if withKey {
		header = append(header, "key")
	}
	header = append(header, Langs...)
	rows, err := readTSV(fsys, name, header)
	if err != nil {
		return nil, err
	}
	var cats []string
	keys := map[string]map[string]int{} // category → key → line
	for _, r := range rows {
		cat := r.cells[0]
		pos := at(name, r.line)
		if _, ok := m[cat]; !ok {
			if first, dup := defined[cat]; dup {
				return nil, fmt.Errorf("%s: category %s is already defined at %s", pos, cat, first)
			}
			defined[cat] = pos
			cats = append(cats, cat)
			keys[cat] = map[string]int{}
		}
		var e Entry
		copy(e.T[:], r.cells[len(header)-len(Langs):])
		e.Key = e.T[0]
		if withKey {
			e.Key = r.cells[1]
		}
		if line, dup := keys[cat][e.Key]; dup {
			return nil, fmt.Errorf("%s: %s: key %q repeats line %d", pos, cat, e.Key, line)
		}
		keys[cat][e.Key] = r.line
		m[cat] = append(m[cat], e)
	}
	return cats, nil
}

// loadIdentifiers fills the identifier pools.
func loadIdentifiers(fsys fs.FS, name string, ids map[string][]string) error {
	rows, err := readTSV(fsys, name, []string{"pool", "value"})
	if err != nil {
		return err
	}
	seen := map[string]int{}
	for _, r := range rows {
		k := r.cells[0] + "\t" + r.cells[1]
		if line, dup := seen[k]; dup {
			return fmt.Errorf("%s: %s: %q repeats line %d", at(name, r.line), r.cells[0], r.cells[1], line)
		}
		seen[k] = r.line
		ids[r.cells[0]] = append(ids[r.cells[0]], r.cells[1])
	}
	return nil
}

// loadGlue reads languages.json: one entry per language of Langs, in order.
func loadGlue(fsys fs.FS, name string) (map[string]langGlue, error) {
	b, elems, err := readJSONArray(fsys, name)
	if err != nil {
		return nil, err
	}
	if len(elems) != len(Langs) {
		return nil, fmt.Errorf("%s: %d languages, want %d (%s)", name, len(elems), len(Langs), strings.Join(Langs, ", "))
	}
	out := make(map[string]langGlue, len(Langs))
	for i, el := range elems {
		pos := at(name, lineAt(b, el.off))
		var g langGlue
		if err := decodeStrict(el.raw, &g); err != nil {
			return nil, jsonErr(name, b, el.off, err)
		}
		switch {
		case g.Lang != Langs[i]:
			return nil, fmt.Errorf("%s: language %q, want %q (languages come in the order %s)", pos, g.Lang, Langs[i], strings.Join(Langs, ", "))
		case g.Name == "" || g.And == "":
			return nil, fmt.Errorf("%s: %s: name and and must be non-empty", pos, g.Lang)
		case len(g.Prefixes) == 0:
			return nil, fmt.Errorf("%s: %s: no prefixes (give at least \"\")", pos, g.Lang)
		case i > 0 && len(g.Prefixes) != len(out[Langs[0]].Prefixes):
			return nil, fmt.Errorf("%s: %s: %d prefixes, %s has %d (instances share the prefix index across languages)",
				pos, g.Lang, len(g.Prefixes), Langs[0], len(out[Langs[0]].Prefixes))
		}
		out[g.Lang] = g
	}
	return out, nil
}

// category returns the entries of a lexicon category (free-form, named or
// enum) and whether it exists. Currency codes reuse the currency entries.
func (t *tables) category(cat string) ([]Entry, bool) {
	if e, ok := t.free[cat]; ok {
		return e, true
	}
	if e, ok := t.named[cat]; ok {
		return e, true
	}
	if cat == "currency_code" {
		e, ok := t.named["currency"]
		return e, ok
	}
	e, ok := t.enum[cat]
	return e, ok
}

// LexiconSize counts the user-facing values with five translations: the
// free-form values, the named entities and the enum words.
func LexiconSize() int {
	n := 0
	for _, m := range []map[string][]Entry{builtin.free, builtin.named, builtin.enum} {
		for _, e := range m {
			n += len(e)
		}
	}
	return n
}
