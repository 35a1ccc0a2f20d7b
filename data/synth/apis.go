package synth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Kind says where an argument's gold value comes from and, following paper
// 000's translation protocol (App. G), whether it is localized.
type Kind int

const (
	// Free is free-form user text (a reminder, a dish, a message): the gold
	// value is the lexicon entry in the user's language.
	Free Kind = iota
	// EntityUser is a named entity the API wants "as the user wrote it": the
	// gold value is the entity's name in the user's language.
	EntityUser
	// EntityEnglish is a named entity the API wants in English ("City name
	// in English"): the gold value is the English name whatever the user's
	// language.
	EntityEnglish
	// Enum is a categorical value: the user says a word in their language,
	// the gold value is the (untranslated) enum value.
	Enum
	// Ident is an identifier (contact, restaurant, e-mail, path, flight
	// number), the same in every language and copied unchanged.
	Ident
	// Int is a number, copied unchanged.
	Int
	// Date is an ISO date (YYYY-MM-DD), copied unchanged.
	Date
	// Time is a time of day (HH:MM), copied unchanged.
	Time
)

// Class is the argument kind of the four: categorical, named_entity,
// free_form or number_date.
func (k Kind) Class() string {
	switch k {
	case Free:
		return "free_form"
	case EntityUser, EntityEnglish, Ident:
		return "named_entity"
	case Enum:
		return "categorical"
	}
	return "number_date"
}

// UserLanguage tells whether the gold value is in the user's language
// (the values that exhibit Argument Language Mismatch when written in
// English).
func (k Kind) UserLanguage() bool { return k == Free || k == EntityUser }

// Arg is one API argument.
type Arg struct {
	Name     string
	Kind     Kind
	Cat      string // lexicon category (Free, Entity*, Enum) or identifier pool (Ident)
	Desc     string // the JSON-schema description the model reads
	Min, Max int    // Int: inclusive range
	Step     int    // Int: granularity (0 means 1)
	Type     string // JSON-schema type; "" means string, or integer for Int
	Required bool
	at       string // file:line of its entry in the API files ("" if built in code)
}

// API is one tool of the benchmark with its utterance templates. Templates
// name arguments as {arg}; template i mentions the same arguments in every
// language, so one sampled instance reads the same in all five.
type API struct {
	Name, Domain, Desc string
	Args               []Arg
	T                  map[string][]string // language → templates
	at                 string              // file:line of its entry ("" if built in code)
	tmplAt             map[string][]string // language → file:line of each template
}

func (a Arg) schemaType() string {
	switch {
	case a.Type != "":
		return a.Type
	case a.Kind == Int:
		return "integer"
	}
	return "string"
}

// enumValues lists the enum values of an Enum argument, in lexicon order.
func (a Arg) enumValues() []string {
	if a.Kind != Enum {
		return nil
	}
	es, _ := builtin.category(a.Cat)
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Key
	}
	return out
}

// Parameters renders the API's JSON-schema parameters, properties in
// declaration order: type, description, then enum.
func (api *API) Parameters() json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{`)
	for i, a := range api.Args {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSON(&b, a.Name)
		b.WriteString(`:{"type":`)
		writeJSON(&b, a.schemaType())
		b.WriteString(`,"description":`)
		writeJSON(&b, a.Desc)
		if ev := a.enumValues(); ev != nil {
			b.WriteString(`,"enum":`)
			writeJSON(&b, ev)
		}
		b.WriteByte('}')
	}
	b.WriteString(`},"required":`)
	req := []string{}
	for _, a := range api.Args {
		if a.Required {
			req = append(req, a.Name)
		}
	}
	writeJSON(&b, req)
	b.WriteByte('}')
	return json.RawMessage(b.Bytes())
}

// writeJSON appends v as JSON without HTML escaping. Values here are
// strings and string slices, which always marshal.
func writeJSON(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	b.Truncate(b.Len() - 1) // Encode appends a newline
}

func (api *API) arg(name string) (Arg, bool) {
	for _, a := range api.Args {
		if a.Name == name {
			return a, true
		}
	}
	return Arg{}, false
}

var placeholderRE = regexp.MustCompile(`\{([a-z_]+)\}`)

// placeholders lists the argument names a template mentions, sorted.
func placeholders(t string) []string {
	var out []string
	for _, m := range placeholderRE.FindAllStringSubmatch(t, -1) {
		out = append(out, m[1])
	}
	sort.Strings(out)
	return out
}

// APIs returns the benchmark's API table (shared; do not modify).
func APIs() []*API { return builtin.apis }

// errf is an error about api, at pos when the position is known.
func (api *API) errf(pos, format string, args ...any) error {
	msg := "api " + api.Name + ": " + fmt.Sprintf(format, args...)
	if pos != "" {
		msg = pos + ": " + msg
	}
	return errors.New(msg)
}

// templateAt is the position of template i in lang (the API's if unknown).
func (api *API) templateAt(lang string, i int) string {
	if ts := api.tmplAt[lang]; i < len(ts) {
		return ts[i]
	}
	return api.at
}

// checkAPIs verifies an API table against t's lexicon: unique names, known
// lexicon categories and pools, templates in every language, template i
// mentioning the same arguments in every language, each argument at most
// once, every required argument in every template.
func (t *tables) checkAPIs(apis []*API) error {
	seen := map[string]bool{}
	for _, api := range apis {
		if seen[api.Name] {
			return api.errf(api.at, "duplicate name")
		}
		seen[api.Name] = true
		if len(api.Args) < 1 || len(api.Args) > 4 {
			return api.errf(api.at, "%d arguments (want 1-4)", len(api.Args))
		}
		for i, a := range api.Args {
			switch a.Kind {
			case Free, EntityUser, EntityEnglish, Enum:
				if _, ok := t.category(a.Cat); !ok {
					return api.errf(a.at, "argument %s: unknown lexicon category %q", a.Name, a.Cat)
				}
			case Ident:
				if _, ok := t.ids[a.Cat]; !ok && a.Cat != "flight" {
					return api.errf(a.at, "argument %s: unknown identifier pool %q", a.Name, a.Cat)
				}
			case Int:
				if a.Min > a.Max {
					return api.errf(a.at, "argument %s: empty range", a.Name)
				}
			}
			for _, b := range api.Args[:i] {
				if b.Name == a.Name {
					return api.errf(a.at, "argument %s declared twice", a.Name)
				}
			}
		}
		n := len(api.T["en"])
		if n == 0 {
			return api.errf(api.at, "no English templates")
		}
		for _, lang := range Langs {
			ts := api.T[lang]
			if len(ts) != n {
				return api.errf(api.at, "%d %s templates, %d English ones", len(ts), lang, n)
			}
			for i, tmpl := range ts {
				pos := api.templateAt(lang, i)
				ph := placeholders(tmpl)
				want := placeholders(api.T["en"][i])
				if strings.Join(ph, ",") != strings.Join(want, ",") {
					return api.errf(pos, "%s template %d mentions %v, English one %v", lang, i, ph, want)
				}
				for j, p := range ph {
					if _, ok := api.arg(p); !ok {
						return api.errf(pos, "%s template %d: unknown argument {%s}", lang, i, p)
					}
					if j > 0 && ph[j-1] == p {
						return api.errf(pos, "%s template %d mentions {%s} twice", lang, i, p)
					}
				}
				for _, a := range api.Args {
					if a.Required && !contains(ph, a.Name) {
						return api.errf(pos, "%s template %d lacks required {%s}", lang, i, a.Name)
					}
				}
				if strings.HasPrefix(tmpl, "{") {
					return api.errf(pos, "%s template %d starts with a slot", lang, i)
				}
			}
		}
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
