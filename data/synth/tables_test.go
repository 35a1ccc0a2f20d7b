package synth

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

// embeddedCopy returns the embedded data files as an editable file system.
func embeddedCopy(t *testing.T) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(tableFS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(tableFS, p)
		m[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTablesLoad(t *testing.T) {
	if builtinErr != nil {
		t.Fatal(builtinErr)
	}
	tb, err := loadTables(embeddedCopy(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.apis) != 58 || len(tb.freeCats) != len(tb.free) || len(tb.glue) != len(Langs) {
		t.Errorf("%d APIs, %d free-form categories listed of %d, %d languages", len(tb.apis), len(tb.freeCats), len(tb.free), len(tb.glue))
	}
	domains := map[string]int{}
	for _, a := range tb.apis {
		domains[a.Domain]++
		if !strings.HasPrefix(a.at, "apis/") || len(a.tmplAt["nl"]) != len(a.T["nl"]) {
			t.Errorf("%s: position %q, %d nl template positions for %d", a.Name, a.at, len(a.tmplAt["nl"]), len(a.T["nl"]))
		}
		for _, arg := range a.Args {
			// Free-form arguments must draw from free-form categories, or the
			// ALM check of TestLexicon would not cover them.
			if _, ok := tb.free[arg.Cat]; (arg.Kind == Free) != ok && arg.Kind != Ident {
				t.Errorf("%s.%s: kind %d with category %q (free-form category: %v)", a.Name, arg.Name, arg.Kind, arg.Cat, ok)
			}
		}
	}
	if len(domains) != 12 || domains["travel"] != 7 || domains["health"] != 3 {
		t.Errorf("domains %v", domains)
	}
}

// TestTablesBadEntry feeds the loader tables with one bad entry each and
// wants the file and line of that entry in the error.
func TestTablesBadEntry(t *testing.T) {
	cases := []struct {
		name           string
		file, old, new string
		lineOf         string // the line the error must name holds this text
		want           string
	}{
		{"missing column", "lexicon/free.tsv", "task\tbuy milk\tcomprar leche\t", "task\tcomprar leche\t",
			"task\tcomprar leche\t", "5 columns, want 6"},
		{"padded cell", "lexicon/named.tsv", "city\tParis\tParis\t", "city\tParis\tParis \t",
			"city\tParis\tParis \t", "column en: \"Paris \" is padded with spaces"},
		{"not NFC", "lexicon/named.tsv", "\tParís\t", "\tPari\u0301s\t",
			"\tPari\u0301s\t", "not in Unicode NFC"},
		{"duplicate key", "lexicon/enum.tsv", "cabin\tbusiness\t", "cabin\teconomy\t",
			"cabin\teconomy\tbusiness class", "cabin: key \"economy\" repeats line"},
		{"category twice", "lexicon/enum.tsv", "\n# currency_code", "\ncity\tx\ta\tb\tc\td\te\n# currency_code",
			"city\tx\t", "category city is already defined at lexicon/named.tsv:"},
		{"bad header", "lexicon/identifiers.tsv", "pool\tvalue\n", "pool\tvalues\n",
			"pool\tvalues", "header row"},
		{"prefix count", "languages.json", `"Hey, "]`, `"Hey, ", "Yo, "]`,
			`{"lang": "es"`, "es: 5 prefixes, en has 6"},
		{"unknown kind", "apis/01-travel.json", `"kind": "entity_english", "cat": "city", "desc": "Departure`, `"kind": "entity", "cat": "city", "desc": "Departure`,
			`"kind": "entity"`, `argument origin: unknown kind "entity"`},
		{"unknown category", "apis/01-travel.json", `"cat": "cabin"`, `"cat": "cabn"`,
			`"cat": "cabn"`, `argument cabin: unknown lexicon category "cabn"`},
		{"unknown field", "apis/01-travel.json", `"desc": "Cabin class", "optional": true`, `"desc": "Cabin class", "optinal": true`,
			`"optinal"`, `unknown field "optinal"`},
		{"int without step", "apis/01-travel.json", `"min": 2, "max": 14, "step": 1}`, `"min": 2, "max": 14}`,
			`"min": 2, "max": 14}`, "argument nights: an int argument gives min, max and step"},
		{"template drops an argument", "apis/01-travel.json", `"it": "Cercami un volo da {origin} a {destination} il {date}"`, `"it": "Cercami un volo da {origin} il {date}"`,
			`"it": "Cercami un volo da {origin} il {date}"`, "api search_flights: it template 0 mentions [date origin], English one [date destination origin]"},
		{"template language missing", "apis/01-travel.json", `,
        "nl": "Zoek een vlucht van {origin} naar {destination} op {date}"`, "",
			`"en": "Find me a flight from {origin}`, "template 0 has no nl utterance"},
		{"syntax error", "apis/01-travel.json", `"desc": "Search flights between two cities.",`, `"desc": "Search flights between two cities."`,
			`"args": [`, "invalid character"},
		{"duplicate API", "apis/02-food.json", `"name": "order_food"`, `"name": "search_flights"`,
			`"name": "search_flights"`, "api search_flights: duplicate name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := embeddedCopy(t)
			text := string(m[c.file].Data)
			if !strings.Contains(text, c.old) {
				t.Fatalf("%s does not contain %q", c.file, c.old)
			}
			text = strings.Replace(text, c.old, c.new, 1)
			m[c.file] = &fstest.MapFile{Data: []byte(text)}
			i := strings.Index(text, c.lineOf)
			if i < 0 {
				t.Fatalf("edited %s does not contain %q", c.file, c.lineOf)
			}
			where := fmt.Sprintf("%s:%d: ", c.file, 1+strings.Count(text[:i], "\n"))
			_, err := loadTables(m)
			if err == nil {
				t.Fatal("loadTables accepted the bad table")
			}
			if !strings.Contains(err.Error(), where) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want %q at %s", err, c.want, where)
			}
		})
	}
}

func TestTablesBadFileName(t *testing.T) {
	m := embeddedCopy(t)
	m["apis/13-health.json"] = m["apis/12-health.json"]
	delete(m, "apis/12-health.json")
	_, err := loadTables(m)
	if err == nil || !strings.Contains(err.Error(), "apis/13-health.json: ") || !strings.Contains(err.Error(), "want 12 here") {
		t.Errorf("error %v, want one naming apis/13-health.json and number 12", err)
	}
}
