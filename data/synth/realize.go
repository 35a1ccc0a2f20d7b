package synth

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/argrl/argrl/data"
)

// An instance is one sampled example, independent of language: the APIs,
// the templates and the argument values. Realizing it in a language gives a
// record; test instances are realized in every test language, so the test
// sets are parallel across languages (as paper 000's translated benchmark).

type value struct {
	entry *Entry // Free, Entity*, Enum
	str   string // Ident, Date, Time
	num   int    // Int
}

type callInst struct {
	api  *API
	tmpl int
	vals map[string]value // the arguments the template mentions
}

type caseKind int

const (
	caseSingle caseKind = iota
	caseParallel
	caseIrrelevant
)

var caseNames = [...]string{"single", "parallel", "irrelevant"}

type instance struct {
	kind   caseKind
	calls  []callInst // irrelevant: the one request no offered tool serves
	tools  []*API     // in prompt order
	prefix int
}

var dateBase = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// sampleCall draws a template and values for api. langs are the languages
// the instance will be realized in (translate_text never targets them).
func sampleCall(rng *rand.Rand, api *API, langs []string) callInst {
	c := callInst{api: api, tmpl: rng.IntN(len(api.T["en"])), vals: map[string]value{}}
	used := map[*Entry]bool{}
	for _, name := range placeholders(api.T["en"][c.tmpl]) {
		a, _ := api.arg(name)
		c.vals[name] = sampleValue(rng, a, used, langs)
	}
	return c
}

func sampleValue(rng *rand.Rand, a Arg, used map[*Entry]bool, langs []string) value {
	switch a.Kind {
	case Free, EntityUser, EntityEnglish, Enum:
		es, _ := builtin.category(a.Cat)
		var cand []*Entry
		for i := range es {
			e := &es[i]
			if used[e] || (a.Cat == "target_language" && contains(langs, e.Key)) {
				continue
			}
			cand = append(cand, e)
		}
		if len(cand) == 0 { // cannot happen with the shipped lexicon; stay total
			cand = []*Entry{&es[0]}
		}
		e := cand[rng.IntN(len(cand))]
		used[e] = true
		return value{entry: e}
	case Ident:
		if a.Cat == "flight" {
			air := builtin.ids["airline"]
			return value{str: air[rng.IntN(len(air))] + strconv.Itoa(100+rng.IntN(9900))}
		}
		pool := builtin.ids[a.Cat]
		return value{str: pool[rng.IntN(len(pool))]}
	case Int:
		step := max(a.Step, 1)
		return value{num: a.Min + step*rng.IntN((a.Max-a.Min)/step+1)}
	case Date:
		return value{str: dateBase.AddDate(0, 0, rng.IntN(730)).Format("2006-01-02")}
	case Time:
		return value{str: fmt.Sprintf("%02d:%02d", 7+rng.IntN(16), 15*rng.IntN(4))}
	}
	return value{}
}

// surface is how the user says v in lang.
func surface(a Arg, v value, li int) string {
	switch a.Kind {
	case Free, EntityUser, EntityEnglish, Enum:
		return v.entry.T[li]
	case Int:
		return strconv.Itoa(v.num)
	}
	return v.str
}

// gold is the value the call must carry (paper 000 App. G). english writes
// user-language values in English instead: the base corpus's habit that
// makes the base model show Argument Language Mismatch.
func gold(a Arg, v value, li int, english bool) any {
	switch a.Kind {
	case Free, EntityUser:
		if english {
			return v.entry.T[0]
		}
		return v.entry.T[li]
	case EntityEnglish:
		return v.entry.T[0]
	case Enum:
		return v.entry.Key
	case Int:
		return v.num
	}
	return v.str
}

// fill replaces each {arg} of a template with its surface form.
func fill(c callInst, li int) string {
	return placeholderRE.ReplaceAllStringFunc(c.api.T[Langs[li]][c.tmpl], func(m string) string {
		name := m[1 : len(m)-1]
		a, _ := c.api.arg(name)
		return surface(a, c.vals[name], li)
	})
}

// lowerFirst lower-cases the first letter of s (after an opening ¿ or
// quote), leaving the English pronoun "I" alone.
func lowerFirst(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unicode.IsLetter(r) {
			break
		}
		i += n
	}
	if i >= len(s) {
		return s
	}
	word := s[i:]
	if word == "I" || strings.HasPrefix(word, "I ") || strings.HasPrefix(word, "I'") {
		return s
	}
	r, n := utf8.DecodeRuneInString(word)
	return s[:i] + string(unicode.ToLower(r)) + word[n:]
}

// utterance renders the user's message for inst in lang.
func utterance(inst *instance, li int) string {
	lang := Langs[li]
	var parts []string
	for i, c := range inst.calls {
		s := fill(c, li)
		switch {
		case i > 0:
			s = builtin.glue[lang].And + " " + lowerFirst(s)
		case builtin.glue[lang].Prefixes[inst.prefix] != "":
			s = builtin.glue[lang].Prefixes[inst.prefix] + lowerFirst(s)
		}
		if !strings.HasSuffix(s, "?") {
			s += "."
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// realize builds the record of inst in lang. english: see gold. withSMV adds
// R2IF's specification/modification documents.
func realize(inst *instance, lang string, english, withSMV bool) data.Record {
	li := langIndex(lang)
	rec := data.Record{
		Lang:     lang,
		Messages: []data.Message{{Role: "user", Content: utterance(inst, li)}},
		Calls:    []data.Call{},
	}
	for _, api := range inst.tools {
		rec.Tools = append(rec.Tools, data.Tool{Name: api.Name, Description: api.Desc, Parameters: api.Parameters()})
	}
	if inst.kind == caseIrrelevant {
		rec.RejectReason = "No available tool can " + lowerFirst(strings.TrimSuffix(inst.calls[0].api.Desc, ".")) + "."
		return rec
	}
	for _, c := range inst.calls {
		call := data.Call{Name: c.api.Name, Arguments: map[string]any{}}
		acc := map[string][]any{}
		smv := map[string]data.SMVDoc{}
		for _, a := range c.api.Args {
			v, ok := c.vals[a.Name]
			if !ok {
				acc[a.Name] = []any{""} // optional and not mentioned: may be omitted
				continue
			}
			g := gold(a, v, li, english)
			call.Arguments[a.Name] = g
			acc[a.Name] = []any{g}
			smv[a.Name] = data.SMVDoc{Spec: a.Desc, Mod: modification(a, lang)}
		}
		rec.Calls = append(rec.Calls, call)
		rec.Accept = append(rec.Accept, acc)
		if withSMV {
			rec.SMV = append(rec.SMV, smv)
		}
	}
	return rec
}

// modification says how the gold value derives from the user's words.
func modification(a Arg, lang string) string {
	switch a.Kind {
	case Free:
		return "Copy the user's words, in the user's language (" + builtin.glue[lang].Name + "); do not translate."
	case EntityUser:
		return "Write the name as the user wrote it, in " + builtin.glue[lang].Name + "."
	case EntityEnglish:
		return "Write the English name, whatever the user's language."
	case Enum:
		return "Map the user's words to the enum value; enum values are never translated."
	case Ident:
		return "Copy the identifier unchanged."
	}
	return "Copy the value unchanged."
}
