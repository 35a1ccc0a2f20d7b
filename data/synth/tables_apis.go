package synth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"sort"
	"strings"
)

// apiJSON is one API of an apis/NN-domain.json file; its domain is the
// file's.
type apiJSON struct {
	Name      string          `json:"name"`
	Desc      string          `json:"desc"`
	Args      json.RawMessage `json:"args"`      // array of argJSON
	Templates json.RawMessage `json:"templates"` // array of objects: language → utterance
}

// argJSON is one argument. Kind is a key of kindNames; Cat names the
// lexicon category (free, entity_*, enum) or the identifier pool (ident; the
// "flight" pool draws airline codes and digits); an int argument gives its
// inclusive range and step; Type overrides the JSON-schema type (integer
// for int, string otherwise); an optional argument may be left out.
type argJSON struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Cat      string `json:"cat"`
	Desc     string `json:"desc"`
	Min      *int   `json:"min"`
	Max      *int   `json:"max"`
	Step     *int   `json:"step"`
	Type     string `json:"type"`
	Optional bool   `json:"optional"`
}

var kindNames = map[string]Kind{"free": Free, "entity_user": EntityUser, "entity_english": EntityEnglish,
	"enum": Enum, "ident": Ident, "int": Int, "date": Date, "time": Time}

var (
	apiFileRE = regexp.MustCompile(`^apis/(\d\d)-([a-z][a-z_]*)\.json$`)
	argNameRE = regexp.MustCompile(`^[a-z_]+$`) // what a {slot} can name
)

// loadAPIs reads the API files in name order.
func loadAPIs(fsys fs.FS) ([]*API, error) {
	names, err := fs.Glob(fsys, "apis/*.json")
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("apis: no API files")
	}
	var out []*API
	for i, name := range names {
		m := apiFileRE.FindStringSubmatch(name)
		if m == nil || m[1] != fmt.Sprintf("%02d", i+1) {
			return nil, fmt.Errorf("%s: API files are named apis/NN-domain.json, numbered from 01 without gaps (want %02d here)", name, i+1)
		}
		apis, err := loadAPIFile(fsys, name, m[2])
		if err != nil {
			return nil, err
		}
		out = append(out, apis...)
	}
	return out, nil
}

func loadAPIFile(fsys fs.FS, name, domain string) ([]*API, error) {
	b, elems, err := readJSONArray(fsys, name)
	if err != nil {
		return nil, err
	}
	out := make([]*API, 0, len(elems))
	for _, el := range elems {
		var j apiJSON
		if err := decodeStrict(el.raw, &j); err != nil {
			return nil, jsonErr(name, b, el.off, err)
		}
		api, err := j.build(name, b, el, domain)
		if err != nil {
			return nil, err
		}
		out = append(out, api)
	}
	return out, nil
}

// build converts one decoded API entry (el, at its offset in the file b).
func (j *apiJSON) build(file string, b []byte, el jsonElem, domain string) (*API, error) {
	pos := at(file, lineAt(b, firstField(el)))
	if fields, err := fieldOffsets(el); err == nil {
		if off, ok := fields["name"]; ok {
			pos = at(file, lineAt(b, off))
		}
	}
	if j.Name == "" || j.Desc == "" {
		return nil, fmt.Errorf("%s: an API needs a name and a desc", pos)
	}
	api := &API{Name: j.Name, Domain: domain, Desc: j.Desc, T: map[string][]string{}, at: pos}
	args, err := subArray(el, "args")
	if err != nil {
		return nil, jsonErr(file, b, el.off, err)
	}
	for _, a := range args {
		apos := at(file, lineAt(b, a.off))
		var aj argJSON
		if err := decodeStrict(a.raw, &aj); err != nil {
			return nil, jsonErr(file, b, a.off, err)
		}
		arg, err := aj.build(apos, api.Name)
		if err != nil {
			return nil, err
		}
		api.Args = append(api.Args, arg)
	}
	tmpls, err := subArray(el, "templates")
	if err != nil {
		return nil, jsonErr(file, b, el.off, err)
	}
	api.tmplAt = map[string][]string{}
	for i, t := range tmpls {
		var byLang map[string]string
		if err := decodeStrict(t.raw, &byLang); err != nil {
			return nil, jsonErr(file, b, t.off, err)
		}
		fields, err := fieldOffsets(t)
		if err != nil {
			return nil, jsonErr(file, b, t.off, err)
		}
		for l := range byLang {
			if langIndex(l) < 0 {
				return nil, fmt.Errorf("%s: api %s: template %d: unknown language %q", at(file, lineAt(b, fields[l])), api.Name, i, l)
			}
		}
		for _, l := range Langs {
			s, ok := byLang[l]
			if !ok {
				return nil, fmt.Errorf("%s: api %s: template %d has no %s utterance", at(file, lineAt(b, firstField(t))), api.Name, i, l)
			}
			api.T[l] = append(api.T[l], s)
			api.tmplAt[l] = append(api.tmplAt[l], at(file, lineAt(b, fields[l])))
		}
	}
	return api, nil
}

// build converts one decoded argument at pos of API api.
func (a *argJSON) build(pos, api string) (Arg, error) {
	fail := func(format string, args ...any) (Arg, error) {
		return Arg{}, fmt.Errorf("%s: api %s: argument %s: %s", pos, api, a.Name, fmt.Sprintf(format, args...))
	}
	if !argNameRE.MatchString(a.Name) {
		return fail("the name must be lower-case letters and _ (templates write it as {name})")
	}
	kind, ok := kindNames[a.Kind]
	if !ok {
		names := make([]string, 0, len(kindNames))
		for n := range kindNames {
			names = append(names, n)
		}
		sort.Strings(names)
		return fail("unknown kind %q (one of %s)", a.Kind, strings.Join(names, ", "))
	}
	if a.Desc == "" {
		return fail("empty desc")
	}
	hasRange := a.Min != nil || a.Max != nil || a.Step != nil
	switch kind {
	case Int:
		if a.Min == nil || a.Max == nil || a.Step == nil || a.Cat != "" {
			return fail("an int argument gives min, max and step, and no cat")
		}
		if *a.Step < 1 {
			return fail("step %d is below 1", *a.Step)
		}
	case Date, Time:
		if a.Cat != "" || hasRange {
			return fail("a %s argument takes no cat, min, max or step", a.Kind)
		}
	default:
		if a.Cat == "" || hasRange {
			return fail("a %s argument gives its cat (lexicon category or identifier pool) and no min, max or step", a.Kind)
		}
	}
	switch a.Type {
	case "", "string", "integer", "number":
	default:
		return fail("type %q is not string, integer or number", a.Type)
	}
	arg := Arg{Name: a.Name, Kind: kind, Cat: a.Cat, Desc: a.Desc, Type: a.Type, Required: !a.Optional, at: pos}
	if kind == Int {
		arg.Min, arg.Max, arg.Step = *a.Min, *a.Max, *a.Step
	}
	return arg, nil
}

// jsonElem is an element of a JSON array and its byte offset in the file.
type jsonElem struct {
	raw json.RawMessage
	off int
}

// offsetError is an error at a byte offset of the text being read.
type offsetError struct {
	off int
	msg string
}

func (e *offsetError) Error() string { return e.msg }

// readJSONArray reads the file name of fsys, which holds one JSON array,
// and splits it into its elements.
func readJSONArray(fsys fs.FS, name string) ([]byte, []jsonElem, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, nil, err
	}
	elems, end, err := jsonArray(b)
	if err == nil && len(bytes.TrimSpace(b[end:])) > 0 {
		err = &offsetError{off: skipSeparators(b, end), msg: "text after the JSON array"}
	}
	if err != nil {
		return nil, nil, jsonErr(name, b, 0, err)
	}
	return b, elems, nil
}

// jsonArray splits the JSON array at the start of b into its elements and
// returns the offset just past it. Offsets, in errors too, count from b.
func jsonArray(b []byte) ([]jsonElem, int, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, 0, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, 0, &offsetError{off: skipSeparators(b, 0), msg: "want a JSON array"}
	}
	var out []jsonElem
	for dec.More() {
		off := skipSeparators(b, int(dec.InputOffset()))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, 0, err
		}
		out = append(out, jsonElem{raw: raw, off: off})
	}
	if _, err := dec.Token(); err != nil { // the closing bracket
		return nil, 0, err
	}
	return out, int(dec.InputOffset()), nil
}

// fieldOffsets returns the file offset of each field value of the JSON
// object el. An error's offset counts from el.
func fieldOffsets(el jsonElem) (map[string]int, error) {
	dec := json.NewDecoder(bytes.NewReader(el.raw))
	if _, err := dec.Token(); err != nil { // the opening brace
		return nil, err
	}
	out := map[string]int{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := tok.(string)
		out[k] = el.off + skipSeparators(el.raw, int(dec.InputOffset()))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// subArray returns the elements of the array-valued field key of the JSON
// object el (none if the field is absent or null), offsets in the file.
// An error's offset counts from el.
func subArray(el jsonElem, key string) ([]jsonElem, error) {
	fields, err := fieldOffsets(el)
	if err != nil {
		return nil, err
	}
	off, ok := fields[key]
	if !ok || bytes.HasPrefix(el.raw[off-el.off:], []byte("null")) {
		return nil, nil
	}
	elems, _, err := jsonArray(el.raw[off-el.off:])
	if err != nil {
		return nil, &offsetError{off: off - el.off + errOffset(err), msg: err.Error()}
	}
	for i := range elems {
		elems[i].off += off
	}
	return elems, nil
}

// firstField is the file offset of what follows the opening brace of the
// JSON object el: its first field, or its closing brace.
func firstField(el jsonElem) int {
	return el.off + skipSeparators(el.raw, min(1, len(el.raw)))
}

// skipSeparators advances i past blanks, commas and colons.
func skipSeparators(b []byte, i int) int {
	for i < len(b) && strings.IndexByte(" \t\r\n,:", b[i]) >= 0 {
		i++
	}
	return i
}

// decodeStrict decodes raw into v, rejecting unknown fields.
func decodeStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// lineAt is the 1-based line of byte offset off in b.
func lineAt(b []byte, off int) int {
	return 1 + bytes.Count(b[:max(0, min(off, len(b)))], []byte("\n"))
}

// errOffset is where err happened in the text it was read from (0 when
// it does not say).
func errOffset(err error) int {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var oe *offsetError
	switch {
	case errors.As(err, &se):
		return max(int(se.Offset)-1, 0) // Offset counts the byte in error
	case errors.As(err, &te):
		return int(te.Offset)
	case errors.As(err, &oe):
		return oe.off
	}
	return 0
}

// jsonErr places an error of the JSON text at b[base:] in file.
func jsonErr(file string, b []byte, base int, err error) error {
	off := base + errOffset(err)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		off, err = len(b), errors.New("unexpected end of file")
	}
	return fmt.Errorf("%s: %w", at(file, lineAt(b, off)), err)
}
