package data

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf16"

	bfclck "github.com/argrl/argrl/internal/bfcl"
)

// bfclHints are the notes BFCL appends to every function description when
// it prompts a model, per language.
var bfclHints = map[bfclck.Language]string{
	bfclck.Python:     " Note that the provided function is in Python 3 syntax.",
	bfclck.Java:       " Note that the provided function is in Java 8 SDK syntax.",
	bfclck.JavaScript: " Note that the provided function is in JavaScript syntax.",
}

// bfclTools decodes BFCL's function list (name, description, parameters)
// into tools as BFCL presents them to models (see ImportBFCL).
func bfclTools(raw json.RawMessage, lang bfclck.Language) ([]Tool, error) {
	var fns []json.RawMessage
	if kindOf(raw) == "object" {
		fns = []json.RawMessage{raw}
	} else if err := json.Unmarshal(raw, &fns); err != nil {
		return nil, fmt.Errorf("must be a list of functions")
	}
	tools := make([]Tool, 0, len(fns))
	for i, f := range fns {
		var fn struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		if err := json.Unmarshal(f, &fn); err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		raw := fn.Parameters
		if lang != bfclck.Python && len(raw) > 0 && !isNull(raw) {
			n, err := parseONode(raw)
			if err != nil {
				return nil, fmt.Errorf("[%d] (%s) parameters: %w", i, fn.Name, err)
			}
			bfclStringParams(n, lang)
			raw = n.marshal()
		}
		params, err := normalizeSchema(raw)
		if err != nil {
			return nil, fmt.Errorf("[%d] (%s) parameters: %w", i, fn.Name, err)
		}
		tools = append(tools, Tool{Name: fn.Name, Description: fn.Description + bfclHints[lang], Parameters: params})
	}
	return tools, nil
}

// bfclStringParams rewrites a Java or JavaScript parameter schema the way
// BFCL does before prompting: every parameter becomes a string whose
// description names its type, element types and object schemas move into
// the description.
func bfclStringParams(n *onode, lang bfclck.Language) {
	props := n.field("properties")
	if n.kind != '{' || props == nil || props.kind != '{' {
		return
	}
	word := map[bfclck.Language]string{bfclck.Java: "Java", bfclck.JavaScript: "JavaScript"}[lang]
	for _, p := range props.vals {
		if p.kind != '{' {
			continue
		}
		typ := onodeString(p.field("type"))
		var add strings.Builder
		if typ == "any" {
			fmt.Fprintf(&add, " This parameter can be of any type of %s object in string representation.", word)
		} else {
			fmt.Fprintf(&add, " This is %s %s type parameter in string representation.", word, typ)
		}
		if lang == bfclck.Java && (typ == "ArrayList" || typ == "Array") || lang == bfclck.JavaScript && typ == "array" {
			elem := ""
			if it := p.field("items"); it != nil {
				elem = onodeString(it.field("type"))
			}
			fmt.Fprintf(&add, " The list elements are of type %s; they are not in string representation.", elem)
			p.remove("items")
		}
		if lang == bfclck.JavaScript && typ == "dict" {
			if sub := p.field("properties"); sub != nil {
				add.WriteString(" The dictionary entries have the following schema; they are not in string representation. ")
				add.WriteString(pyDumps(sub))
				p.remove("properties")
			}
		}
		p.setString("description", onodeString(p.field("description"))+add.String())
		p.setString("type", "string")
	}
}

func onodeString(n *onode) string {
	var s string
	if n != nil && n.kind == '"' {
		json.Unmarshal(n.raw, &s)
	}
	return s
}

// remove deletes key k of an object node.
func (n *onode) remove(k string) {
	if i := n.index(k); i >= 0 {
		n.keys = append(n.keys[:i], n.keys[i+1:]...)
		n.vals = append(n.vals[:i], n.vals[i+1:]...)
	}
}

// setString sets key k of an object node to the string s (appending the
// key when absent).
func (n *onode) setString(k, s string) {
	b, _ := marshalNoEscape(s)
	if old := n.field(k); old != nil {
		*old = onode{kind: '"', raw: b}
		return
	}
	n.keys = append(n.keys, k)
	n.vals = append(n.vals, &onode{kind: '"', raw: b})
}

// pyDumps writes n as Python's json.dumps does by default: ", " and ": "
// separators, non-ASCII characters as \u escapes (numbers as written).
func pyDumps(n *onode) string {
	var b strings.Builder
	var write func(n *onode)
	write = func(n *onode) {
		switch n.kind {
		case '{':
			b.WriteByte('{')
			for i, k := range n.keys {
				if i > 0 {
					b.WriteString(", ")
				}
				pyString(&b, k)
				b.WriteString(": ")
				write(n.vals[i])
			}
			b.WriteByte('}')
		case '[':
			b.WriteByte('[')
			for i, v := range n.vals {
				if i > 0 {
					b.WriteString(", ")
				}
				write(v)
			}
			b.WriteByte(']')
		case '"':
			pyString(&b, onodeString(n))
		default:
			b.Write(n.raw)
		}
	}
	write(n)
	return b.String()
}

func pyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
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
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || (r > 0x7f && r < 0x10000):
			fmt.Fprintf(b, `\u%04x`, r)
		case r >= 0x10000:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(b, `\u%04x\u%04x`, hi, lo)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}
