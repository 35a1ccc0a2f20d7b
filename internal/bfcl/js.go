package bfcl

import "strings"

var (
	jsIntRe    = mustRe(`\A-?` + reD + `+` + reE)
	jsFloatRe  = mustRe(`\A-?` + reD + `+(?:\.` + reD + `+)?` + reE)
	jsBigintRe = mustRe(`\A-?` + reD + `+n` + reE)

	js2DRe = mustRe(`\A(?:\[` + reS + `*\[.*?\]` + reS + `*(?:,` + reS + `*\[.*?\]` + reS + `*)*\]|\bnew` + reS +
		`+Array\(` + reS + `*\[.*?\]` + reS + `*(?:,` + reS + `*\[.*?\]` + reS + `*)*\))`)
	jsInnerRe = mustRe(`\[(.*?)\]`)
	jsArrayRe = mustRe(`\A(?:\[(.*?)\]|\bnew` + reS + `+Array\((.*?)\))`)
	jsDictRe  = mustRe(`\A\{(.*?)\}`)
)

func quoted(s string) bool {
	return len(s) > 0 && (strings.HasPrefix(s, `"`) && strings.HasSuffix(s, `"`) ||
		strings.HasPrefix(s, "'") && strings.HasSuffix(s, "'"))
}

// jsConvert is js_type_converter: the value of a JavaScript literal of type
// typ (elem: an array's element type, "" for none).
func jsConvert(v, typ, elem string) (Value, error) {
	switch typ {
	case "String":
		if quoted(v) {
			return inner(v), nil
		}
		return v, nil
	case "integer":
		return ifMatch(jsIntRe, v, mustInt)
	case "float":
		return ifMatch(jsFloatRe, v, mustFloat)
	case "Bigint":
		return ifMatch(jsBigintRe, v, func(s string) (Value, error) { return mustInt(dropLastChar(s)) })
	case "Boolean":
		switch v {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return v, nil
	case "dict":
		return jsDict(pyStrip(v)), nil
	case "array":
		return jsArray(pyStrip(v), elem), nil
	case "any":
		return v, nil
	}
	return nil, raise("ValueError", "Unsupported type: %s", typ)
}

// jsArray is parse_js_collection for arrays: a two-dimensional literal, a
// one-dimensional one (elements converted to elem when given), else the
// text itself, which is also the answer when a conversion raises.
func jsArray(code, elem string) Value {
	if loc := js2DRe.FindStringIndex(code); loc != nil {
		m := code[loc[0]:loc[1]]
		out := []Value{}
		for i, in := range jsInnerRe.FindAllStringSubmatch(m, -1) {
			s := pyStrip(in[1])
			if i == 0 && strings.HasPrefix(s, "[") {
				s = s[1:]
			}
			row := []Value{}
			for _, e := range strings.Split(s, ",") {
				row = append(row, jsValue(pyStrip(e)))
			}
			out = append(out, row)
		}
		return out
	}
	m := jsArrayRe.FindStringSubmatchIndex(code)
	if m == nil {
		return code
	}
	body := ""
	switch {
	case m[2] >= 0:
		body = code[m[2]:m[3]]
	case m[4] >= 0:
		body = code[m[4]:m[5]]
	}
	var parts []string
	if s := pyStrip(body); s != "" {
		parts = strings.Split(s, ",")
	}
	out := make([]Value, 0, len(parts))
	for _, p := range parts {
		p = pyStrip(p)
		if elem == "" {
			out = append(out, jsValue(p))
			continue
		}
		v, err := jsConvert(p, elem, "")
		if err != nil {
			return code
		}
		out = append(out, v)
	}
	return out
}

// jsDict is parse_js_collection for objects: {key: value, ...} up to the
// first "}", with array and object values parsed again and others read by
// parse_js_value; else the text itself.
func jsDict(code string) Value {
	if code == "{}" {
		return NewDict()
	}
	m := jsDictRe.FindStringSubmatch(code)
	if m == nil {
		return code
	}
	d := NewDict()
	for _, kv := range jsPairs(m[1]) {
		key := strings.Trim(pyStrip(kv[0]), `'"`)
		val := pyStrip(kv[1])
		switch {
		case strings.HasPrefix(val, "[") && strings.HasSuffix(val, "]"):
			d.Set(key, jsArray(val, ""))
		case strings.HasPrefix(val, "{") && strings.HasSuffix(val, "}"):
			d.Set(key, jsDict(val))
		default:
			d.Set(key, jsValue(strings.Trim(val, `'"`)))
		}
	}
	return d
}

// jsPairs is re.findall(r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)", s), the
// checker's key/value splitter, written out because Go's regular
// expressions have no lookahead. It tries the same alternatives in the
// same order as Python's backtracking matcher.
func jsPairs(s string) [][2]string {
	rs := []rune(s)
	var out [][2]string
	for pos := 0; pos < len(rs); {
		end, kv, ok := jsPairAt(rs, pos)
		if !ok {
			pos++
			continue
		}
		out = append(out, kv)
		pos = end
	}
	return out
}

func jsPairAt(rs []rune, start int) (int, [2]string, bool) {
	n := len(rs)
	colon := start
	for colon < n && rs[colon] != ':' {
		colon++
	}
	if colon == start || colon == n {
		return 0, [2]string{}, false
	}
	key := string(rs[start:colon])
	wsEnd := colon + 1
	for wsEnd < n && isPySpace(rs[wsEnd]) {
		wsEnd++
	}
	for w := wsEnd; w > colon; w-- { // \s* gives back one character at a time
		for j := w; ; j++ { // .*? takes one more character at a time
			if j < n && rs[j] == ',' {
				after := j + 1
				for after < n && isPySpace(rs[after]) {
					after++
				}
				for x := after; x > j; x-- {
					if keyAhead(rs, x) {
						return x, [2]string{key, string(rs[w:j])}, true
					}
				}
			}
			if j == n || (j == n-1 && rs[j] == '\n') {
				return j, [2]string{key, string(rs[w:j])}, true
			}
			if rs[j] == '\n' {
				break
			}
		}
	}
	return 0, [2]string{}, false
}

// keyAhead is the lookahead (?=[^,]+:) at x: a ":" after at least one
// character, with no "," before it.
func keyAhead(rs []rune, x int) bool {
	for q := x; q < len(rs) && rs[q] != ','; q++ {
		if q > x && rs[q] == ':' {
			return true
		}
	}
	return false
}

// jsValue is parse_js_value: true, false, a quoted string, an int, a
// float, else the text.
func jsValue(s string) Value {
	s = pyStrip(s)
	switch {
	case s == "true":
		return true
	case s == "false":
		return false
	case quoted(s):
		return inner(s)
	}
	if i, ok := pyInt(s); ok {
		return i
	}
	if f, ok := pyFloat(s); ok {
		return f
	}
	return s
}
