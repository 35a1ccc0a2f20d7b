package bfcl

import (
	"regexp"
	"strings"
)

// The checker's Java and JavaScript type converters turn an argument
// written as source text into a Python value with regular expressions,
// falling back to the text itself. Their patterns are Python's: \d, \s and
// \w are Unicode classes and $ also matches before a final newline, so the
// Go patterns below spell those out.
const (
	reS = `[\t\n\v\f\r\x1c-\x1f\x85\p{Z}]` // Python's \s
	reW = `[\p{L}\p{N}_]`                  // Python's \w
	reD = `\p{Nd}`                         // Python's \d
	reE = `\n?\z`                          // Python's $ at the end of a pattern
)

func mustRe(s string) *regexp.Regexp { return regexp.MustCompile(s) }

var (
	javaIntRe    = mustRe(`\A-?` + reD + `+` + reE)
	javaFloatRe  = mustRe(`\A-?` + reD + `+(?:\.` + reD + `+)?(?:[eE][+-]?` + reD + `+)?[fF]` + reE)
	javaDoubleRe = mustRe(`\A-?` + reD + `+(?:\.` + reD + `+)?(?:[eE][+-]?` + reD + `+)?` + reE)
	javaLongRe   = mustRe(`\A-?` + reD + `+[lL]` + reE)

	javaAsListRe    = mustRe(`new` + reS + `+ArrayList<` + reW + `*>\(Arrays\.asList\((.+?)\)\)`)
	javaAddsRe      = mustRe(`(?s)new` + reS + `+ArrayList<` + reW + `*>\(\)` + reS + `*\{\{` + reS + `*(.+?)` + reS + `*\}\}`)
	javaAddRe       = mustRe(`add\((.+?)\)`)
	javaEmptyListRe = mustRe(`new` + reS + `+ArrayList<` + reW + `*>\(\)`)
	javaArrayRe     = mustRe(`new` + reS + `+` + reW + `+\[\]` + reS + `*\{(.*?)\}`)
	javaMapRe       = mustRe(`(?s)new` + reS + `+HashMap<.*?>` + reS + `*\(\)` + reS + `*\{` + reS + `*\{?` + reS + `*(.*?)` + reS + `*\}?` + reS + `*\}`)
	javaPutRe       = mustRe(`put\("(.*?)",` + reS + `*(.*?)\)`)
	javaEmptyMapRe  = mustRe(`new` + reS + `+HashMap<.*?>` + reS + `*\(\)`)
)

// dropSuffixChar removes the character a pattern ending in [xX]$ matched:
// the last one, or the one before a final newline.
func dropSuffixChar(s string) string {
	if strings.HasSuffix(s, "\n") {
		return s[:len(s)-2] + "\n"
	}
	return s[:len(s)-1]
}

// dropLastChar is Python's s[:-1].
func dropLastChar(s string) string {
	rs := []rune(s)
	if len(rs) == 0 {
		return ""
	}
	return string(rs[:len(rs)-1])
}

// javaConvert is java_type_converter: the value of a Java literal of type
// typ (elem: the element type of Array and ArrayList, "" for none).
func javaConvert(v, typ, elem string) (Value, error) {
	switch typ {
	case "byte", "short", "integer":
		return ifMatch(javaIntRe, v, mustInt)
	case "float":
		return ifMatch(javaFloatRe, v, func(s string) (Value, error) { return mustFloat(dropSuffixChar(s)) })
	case "double":
		return ifMatch(javaDoubleRe, v, mustFloat)
	case "long":
		return ifMatch(javaLongRe, v, func(s string) (Value, error) { return mustInt(dropSuffixChar(s)) })
	case "boolean":
		switch v {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return v, nil
	case "char", "String", "any":
		// The char pattern (^'.$') can never match, so a char stays text.
		return v, nil
	case "Array":
		return javaArray(v, elem)
	case "ArrayList":
		return javaArrayList(v, elem)
	case "HashMap":
		return javaHashMap(v), nil
	case "Set", "Hashtable", "Queue", "Stack":
		return nil, raise("NotImplementedError", "%s conversion is not implemented", typ)
	}
	return nil, raise("ValueError", "Unsupported type: %s", typ)
}

// ifMatch converts v when the pattern matches it, else leaves it text (the
// converters' default).
func ifMatch(re *regexp.Regexp, v string, conv func(string) (Value, error)) (Value, error) {
	if !re.MatchString(v) {
		return v, nil
	}
	return conv(v)
}

func mustInt(s string) (Value, error) {
	if i, ok := pyInt(s); ok {
		return i, nil
	}
	return nil, raise("ValueError", "invalid literal for int() with base 10: %s", repr(s))
}

func mustFloat(s string) (Value, error) {
	if f, ok := pyFloat(s); ok {
		return f, nil
	}
	return nil, raise("ValueError", "could not convert string to float: %s", repr(s))
}

// javaElement converts one element of an ArrayList: char and String
// elements lose their first and last characters (the quotes).
func javaElement(e, elem string) (Value, error) {
	switch elem {
	case "char", "String":
		return inner(e), nil
	case "":
		return javaValue(e)
	}
	return javaConvert(e, elem, "")
}

func javaArrayList(s, elem string) (Value, error) {
	var parts []string
	if m := javaAsListRe.FindStringSubmatch(s); m != nil {
		parts = strings.Split(m[1], ",")
	} else if m := javaAddsRe.FindStringSubmatch(s); m != nil {
		parts = []string{}
		for _, a := range javaAddRe.FindAllStringSubmatch(m[1], -1) {
			parts = append(parts, a[1])
		}
	} else if javaEmptyListRe.MatchString(s) {
		return []Value{}, nil
	} else {
		return s, nil
	}
	out := make([]Value, 0, len(parts))
	for _, p := range parts {
		v, err := javaElement(pyStrip(p), elem)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func javaArray(s, elem string) (Value, error) {
	m := javaArrayRe.FindStringSubmatch(s)
	if m == nil {
		return s, nil
	}
	out := []Value{}
	for _, p := range strings.Split(m[1], ",") {
		p = pyStrip(p)
		if p == "" {
			continue
		}
		var v Value
		var err error
		if elem != "" {
			v, err = javaConvert(p, elem, "")
		} else {
			v, err = javaValue(p)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func javaHashMap(s string) Value {
	m := javaMapRe.FindStringSubmatch(s)
	if m == nil {
		if javaEmptyMapRe.MatchString(s) {
			return NewDict()
		}
		return s
	}
	d := NewDict()
	if pyStrip(m[1]) != "" {
		for _, p := range javaPutRe.FindAllStringSubmatch(m[1], -1) {
			v, err := javaValue(pyStrip(p[2]))
			if err != nil {
				v = p[2] // unreachable: javaValue fails only on a long's newline
			}
			d.Set(p[1], v)
		}
	}
	return d
}

// javaValue is parse_java_value: a Java literal without a declared type.
func javaValue(s string) (Value, error) {
	switch {
	case s == "true":
		return true, nil
	case s == "false":
		return false, nil
	case strings.HasPrefix(s, `"`) && strings.HasSuffix(s, `"`):
		return inner(s), nil
	case javaLongRe.MatchString(s):
		return mustInt(dropLastChar(s))
	case javaFloatRe.MatchString(s):
		return mustFloat(dropSuffixChar(s))
	}
	if i, ok := pyInt(s); ok {
		return i, nil
	}
	if f, ok := pyFloat(s); ok {
		return f, nil
	}
	return s, nil
}
