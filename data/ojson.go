package data

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// onode is an order-preserving JSON tree, used to rewrite source schemas
// without reordering their keys. Scalars keep their raw text.
type onode struct {
	kind byte            // '{', '[', or '"' for strings, 's' for other scalars
	raw  json.RawMessage // scalars
	keys []string        // objects
	vals []*onode        // object values (keys order) or array elements
}

func parseONode(raw json.RawMessage) (*onode, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	n, err := decodeONode(dec)
	if err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("unexpected data after JSON value")
	}
	return n, nil
}

func decodeONode(dec *json.Decoder) (*onode, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &onode{kind: '{'}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeONode(dec)
				if err != nil {
					return nil, err
				}
				if old := n.field(k); old != nil {
					*old = *v
					continue
				}
				n.keys = append(n.keys, k)
				n.vals = append(n.vals, v)
			}
			_, err := dec.Token()
			return n, err
		case '[':
			n := &onode{kind: '['}
			for dec.More() {
				v, err := decodeONode(dec)
				if err != nil {
					return nil, err
				}
				n.vals = append(n.vals, v)
			}
			_, err := dec.Token()
			return n, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case string:
		b, _ := marshalNoEscape(t)
		return &onode{kind: '"', raw: b}, nil
	case json.Number:
		return &onode{kind: 's', raw: json.RawMessage(t.String())}, nil
	case bool:
		b, _ := json.Marshal(t)
		return &onode{kind: 's', raw: b}, nil
	case nil:
		return &onode{kind: 's', raw: json.RawMessage("null")}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// field returns the value under key k of an object node, or nil.
func (n *onode) field(k string) *onode {
	if i := n.index(k); i >= 0 {
		return n.vals[i]
	}
	return nil
}

// index is the position of key k in an object node, or -1.
func (n *onode) index(k string) int {
	for i, key := range n.keys {
		if key == k {
			return i
		}
	}
	return -1
}

func (n *onode) marshal() json.RawMessage {
	var b bytes.Buffer
	n.write(&b)
	return b.Bytes()
}

func (n *onode) write(b *bytes.Buffer) {
	switch n.kind {
	case '{':
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			kb, _ := marshalNoEscape(k)
			b.Write(kb)
			b.WriteString(": ")
			n.vals[i].write(b)
		}
		b.WriteByte('}')
	case '[':
		b.WriteByte('[')
		for i, v := range n.vals {
			if i > 0 {
				b.WriteString(", ")
			}
			v.write(b)
		}
		b.WriteByte(']')
	default:
		b.Write(n.raw)
	}
}

// marshalNoEscape encodes v as JSON without HTML escaping.
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
