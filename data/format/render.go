package format

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/argrl/argrl/data"
)

// style selects JSON or Python literal syntax for rendered values.
type style int

const (
	styleJSON style = iota
	stylePython
)

// writeCallJSON writes {"name": "f", "arguments": {...}} in json.dumps'
// default layout (", " and ": " separators, non-ASCII unescaped).
func writeCallJSON(b *strings.Builder, c data.Call, s *data.Schema) {
	b.WriteString(`{"name": `)
	writeString(b, c.Name, styleJSON)
	b.WriteString(`, "arguments": `)
	writeObject(b, c.Arguments, s, styleJSON)
	b.WriteByte('}')
}

// writeCallPython writes f(a="v", b=2).
func writeCallPython(b *strings.Builder, c data.Call, s *data.Schema) {
	b.WriteString(c.Name)
	b.WriteByte('(')
	for i, k := range orderKeys(c.Arguments, s) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k)
		b.WriteByte('=')
		ps, _ := s.Property(k)
		writeValue(b, c.Arguments[k], ps, stylePython)
	}
	b.WriteByte(')')
}

func writeObject(b *strings.Builder, m map[string]any, s *data.Schema, st style) {
	b.WriteByte('{')
	for i, k := range orderKeys(m, s) {
		if i > 0 {
			b.WriteString(", ")
		}
		writeString(b, k, st)
		b.WriteString(": ")
		ps, _ := s.Property(k)
		writeValue(b, m[k], ps, st)
	}
	b.WriteByte('}')
}

// writeValue writes v; s (may be nil) orders nested object keys.
func writeValue(b *strings.Builder, v any, s *data.Schema, st style) {
	switch x := v.(type) {
	case nil:
		b.WriteString(map[style]string{styleJSON: "null", stylePython: "None"}[st])
	case bool:
		switch {
		case st == stylePython && x:
			b.WriteString("True")
		case st == stylePython:
			b.WriteString("False")
		default:
			b.WriteString(strconv.FormatBool(x))
		}
	case string:
		writeString(b, x, st)
	case float64:
		b.WriteString(formatNumber(x))
	case float32:
		b.WriteString(formatNumber(float64(x)))
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case int32:
		b.WriteString(strconv.FormatInt(int64(x), 10))
	case json.Number:
		if f, err := x.Float64(); err == nil {
			b.WriteString(formatNumber(f))
		} else {
			writeString(b, string(x), st)
		}
	case []any:
		var items *data.Schema
		if s != nil {
			items = s.Items
		}
		b.WriteByte('[')
		for i, el := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, el, items, st)
		}
		b.WriteByte(']')
	case map[string]any:
		writeObject(b, x, s, st)
	default:
		// Other Go values (e.g. []string built in code) go through JSON.
		raw, err := json.Marshal(x)
		var back any
		if err == nil && json.Unmarshal(raw, &back) == nil {
			writeValue(b, back, s, st)
			return
		}
		writeString(b, fmt.Sprint(x), st)
	}
}

// formatNumber writes integral values without a fraction (15000, not
// 15000.0 or 1.5e+04) and others in the shortest form that parses back to
// the same float64. NaN and ±Inf have no literal in either syntax and are
// written as null-like strings so the output stays parseable.
func formatNumber(f float64) string {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return `"` + strconv.FormatFloat(f, 'g', -1, 64) + `"`
	case f == math.Trunc(f) && math.Abs(f) < 1e21:
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// writeString writes a double-quoted string. JSON style escapes ", \ and
// control characters, and "</" as "<\/" so a value can never close a
// <tool_call> or <tool> block early. Python style escapes ", \ and control
// characters (\n, \t, \r, \xhh). Non-ASCII is written as is; invalid UTF-8
// bytes become U+FFFD.
func writeString(b *strings.Builder, s string, st style) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '/' && st == styleJSON && i > 0 && s[i-1] == '<':
			b.WriteString(`\/`)
		case r < 0x20 || r == 0x7f:
			if st == styleJSON {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				fmt.Fprintf(b, `\x%02x`, r)
			}
		default:
			b.WriteRune(r)
		}
		i += size
	}
	b.WriteByte('"')
}
