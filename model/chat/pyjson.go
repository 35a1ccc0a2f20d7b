package chat

// JSON written the way the templates' `tojson` writes it in transformers,
// i.e. Python's json.dumps(x, ensure_ascii=False): key order kept, ", " and
// ": " separators (with an indent: "," and ": "), non-ASCII unescaped,
// floats in Python's repr (1.0, 1e-05, 1e+16).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// pyValue is an ordered JSON value.
type pyValue struct {
	kind   byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	str    string
	num    json.Number
	b      bool
	fields []pyField // objects
	items  []pyValue // arrays
}

type pyField struct {
	key string
	val pyValue
}

func pyString(s string) pyValue           { return pyValue{kind: 's', str: s} }
func pyObject(f []pyField) pyValue        { return pyValue{kind: 'o', fields: f} }
func parsePy(raw []byte) (pyValue, error) { return decodePy(raw) }

// decodePy parses raw JSON keeping object key order.
func decodePy(raw []byte) (pyValue, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodePyValue(dec, 0)
	if err != nil {
		return pyValue{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return pyValue{}, fmt.Errorf("trailing data after JSON value")
	}
	return v, nil
}

func decodePyValue(dec *json.Decoder, depth int) (pyValue, error) {
	if depth > 200 {
		return pyValue{}, fmt.Errorf("JSON nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return pyValue{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			v := pyValue{kind: 'o'}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return pyValue{}, err
				}
				k, _ := kt.(string)
				val, err := decodePyValue(dec, depth+1)
				if err != nil {
					return pyValue{}, err
				}
				// A repeated key keeps its first position and last value, as a Python dict does.
				replaced := false
				for i := range v.fields {
					if v.fields[i].key == k {
						v.fields[i].val, replaced = val, true
					}
				}
				if !replaced {
					v.fields = append(v.fields, pyField{k, val})
				}
			}
			_, err := dec.Token() // '}'
			return v, err
		case '[':
			v := pyValue{kind: 'a'}
			for dec.More() {
				el, err := decodePyValue(dec, depth+1)
				if err != nil {
					return pyValue{}, err
				}
				v.items = append(v.items, el)
			}
			_, err := dec.Token() // ']'
			return v, err
		}
	case string:
		return pyString(t), nil
	case json.Number:
		return pyValue{kind: 'n', num: t}, nil
	case bool:
		return pyValue{kind: 'b', b: t}, nil
	case nil:
		return pyValue{kind: 'z'}, nil
	}
	return pyValue{}, fmt.Errorf("unexpected JSON token %v", tok)
}

// write writes v; indent 0 means one line.
func (v pyValue) write(b *strings.Builder, indent, depth int) {
	nl := func(d int) {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat(" ", indent*d))
	}
	sep := ", "
	if indent > 0 {
		sep = ","
	}
	switch v.kind {
	case 'o':
		if len(v.fields) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteByte('{')
		for i, f := range v.fields {
			if i > 0 {
				b.WriteString(sep)
			}
			if indent > 0 {
				nl(depth + 1)
			}
			writePyString(b, f.key)
			b.WriteString(": ")
			f.val.write(b, indent, depth+1)
		}
		if indent > 0 {
			nl(depth)
		}
		b.WriteByte('}')
	case 'a':
		if len(v.items) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i, el := range v.items {
			if i > 0 {
				b.WriteString(sep)
			}
			if indent > 0 {
				nl(depth + 1)
			}
			el.write(b, indent, depth+1)
		}
		if indent > 0 {
			nl(depth)
		}
		b.WriteByte(']')
	case 's':
		writePyString(b, v.str)
	case 'n':
		b.WriteString(pyNumber(v.num))
	case 'b':
		b.WriteString(strconv.FormatBool(v.b))
	default:
		b.WriteString("null")
	}
}

// pyNumber writes a JSON number as Python re-serializes it: integers as
// written, floats in repr form.
func pyNumber(n json.Number) string {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		return s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return s
	}
	// repr: positional for 1e-4 <= |f| < 1e16, else exponent form; the
	// shortest digits that round-trip either way.
	if a := math.Abs(f); a == 0 || (a >= 1e-4 && a < 1e16) {
		out := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(out, ".") {
			out += ".0"
		}
		return out
	}
	return strconv.FormatFloat(f, 'e', -1, 64)
}

// writePyString writes s quoted as json.dumps(ensure_ascii=False) does.
func writePyString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if c < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&15])
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}
