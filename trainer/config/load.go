package config

// Configuration loading (docs/contracts.md §8). viper layers the sources,
// the first one that sets a key winning:
//
//	--set a.b=c    viper's override layer (Set)
//	ARGRL_A_B=c    viper's environment layer (SetEnvPrefix, SetEnvKeyReplacer, AutomaticEnv)
//	the YAML file  viper's config layer (MergeConfigMap)
//	Default()      viper's default layer (SetDefault)
//
// and unmarshals the result into a Config by its yaml tags (Unmarshal).
// What viper does not do is refuse: an unknown key or an ill-typed value
// must be an error that names the file, the line and the key. So each
// source is first decoded strictly here, the way yaml.v3 decodes into the
// Config's types: the file node by node (an error names file:line and the
// dotted key), each --set value and each ARGRL_ variable as YAML into its
// key's type (an error names the flag or the variable and the key); an
// ARGRL_ variable that names no key is an error too. A string key takes a
// --set or ARGRL_ value verbatim (`--set model.system="Be brief: call
// tools."` is that sentence); every other type is YAML (`--set
// lora.targets=[q,v]`). The file's and the --set values go to viper as
// decoded; an environment value reaches viper's Unmarshal as the string it
// is and is decoded there by the same rule (yamlHook).

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
	"gopkg.in/yaml.v3"
)

// EnvPrefix is the prefix of environment overrides: ARGRL_A_B=c sets a.b.
const EnvPrefix = "ARGRL"

// ignoredEnv are ARGRL_ variables that are not config keys.
var ignoredEnv = map[string]bool{"ARGRL_CACHE": true, "ARGRL_LONG": true}

// loadInto fills dst (a pointer to a struct holding the defaults) from
// the YAML src (named name in errors; nil: no file), then the environment
// (when env), then sets ("a.b=c"), through viper (see the file header). It
// returns where each key it set came from: "FILE:LINE", "--set KEY" or the
// ARGRL_ variable (a key left at its default is absent).
func loadInto(dst any, name string, src []byte, sets []string, env bool) (map[string]string, error) {
	rv := reflect.ValueOf(dst).Elem()
	t := rv.Type()
	v := viper.New()
	if env {
		v.SetEnvPrefix(EnvPrefix)
		v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
		v.AutomaticEnv()
	}
	for k, val := range leafValues(rv, "") {
		v.SetDefault(k, val)
	}
	origins := map[string]string{}
	if src != nil {
		vals, err := decodeFile(t, name, src)
		if err != nil {
			return nil, err
		}
		if err := v.MergeConfigMap(nested(vals)); err != nil {
			return nil, fmt.Errorf("config: %s: %w", name, err)
		}
		lines := map[string]int{}
		var doc yaml.Node
		if yaml.Unmarshal(src, &doc) == nil && len(doc.Content) > 0 {
			keyLines(doc.Content[0], "", lines)
		}
		for k := range vals {
			origins[k] = name
			for p := k; p != ""; p = parentKey(p) {
				if l, ok := lines[p]; ok {
					origins[k] = fmt.Sprintf("%s:%d", name, l)
					break
				}
			}
		}
	}
	if env {
		set, err := checkEnv(t, v.AllKeys())
		if err != nil {
			return nil, err
		}
		for k, name := range set {
			origins[k] = name
		}
	}
	for _, s := range sets {
		k, val, ok := strings.Cut(s, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("--set %q: want key=value", s)
		}
		vals, err := decodeValue(t, k, val, "--set "+k)
		if err != nil {
			return nil, err
		}
		for lk, lv := range vals {
			v.Set(lk, lv)
			origins[lk] = "--set " + k
		}
	}
	out := reflect.New(t)
	if err := v.Unmarshal(out.Interface(), func(dc *mapstructure.DecoderConfig) {
		dc.TagName, dc.SquashTagOption = "yaml", "inline"
		dc.WeaklyTypedInput = false
		dc.DecodeHook = yamlHook
	}); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	rv.Set(out.Elem())
	return origins, nil
}

// keyLines records the line of every key of the mapping n (nested keys
// dotted below prefix).
func keyLines(n *yaml.Node, prefix string, lines map[string]int) {
	if n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := joinKey(prefix, n.Content[i].Value)
		if _, seen := lines[k]; !seen {
			lines[k] = n.Content[i].Line
		}
		keyLines(n.Content[i+1], k, lines)
	}
}

// parentKey is "a.b" for "a.b.c" and "" for "a".
func parentKey(k string) string {
	i := strings.LastIndexByte(k, '.')
	if i < 0 {
		return ""
	}
	return k[:i]
}

// yamlHook decodes a string (an environment value) for a key of another
// type as YAML, as decodeValue checked it would.
func yamlHook(from, to reflect.Value) (any, error) {
	if from.Kind() != reflect.String || to.Kind() == reflect.String || to.Kind() == reflect.Interface {
		return from.Interface(), nil
	}
	nv := reflect.New(to.Type())
	if err := yaml.Unmarshal([]byte(from.String()), nv.Interface()); err != nil {
		return nil, err
	}
	return nv.Elem().Interface(), nil
}

// checkEnv decodes every ARGRL_ variable that sets one of keys, in key
// order, and refuses one that names no key, so a typo never passes
// silently. An empty variable is unset, as viper treats it. It returns
// the keys set, each with its variable's name.
func checkEnv(t reflect.Type, keys []string) (map[string]string, error) {
	sort.Strings(keys)
	known := map[string]bool{}
	set := map[string]string{}
	for _, k := range keys {
		env := envName(k)
		known[env] = true
		if val := os.Getenv(env); val != "" {
			if _, err := decodeValue(t, k, val, env); err != nil {
				return nil, err
			}
			set[k] = env
		}
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, EnvPrefix+"_") && !known[name] && !ignoredEnv[name] {
			return nil, fmt.Errorf("environment: %s names no config key", name)
		}
	}
	return set, nil
}

// envName is the variable viper's AutomaticEnv reads for key: a.b_c ↔
// ARGRL_A_B_C.
func envName(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// leafValues maps every settable dotted key below the struct v to its
// value (a list or any other non-struct field is a leaf).
func leafValues(v reflect.Value, prefix string) map[string]any {
	out := map[string]any{}
	for name, idx := range yamlFields(v.Type()) {
		f := v.FieldByIndex(idx)
		k := joinKey(prefix, name)
		if f.Kind() == reflect.Struct && !hasUnmarshaler(f.Type()) {
			for sk, sv := range leafValues(f, k) {
				out[sk] = sv
			}
			continue
		}
		out[k] = f.Interface()
	}
	return out
}

// nested turns dotted keys into the nested maps viper's config layer holds.
func nested(vals map[string]any) map[string]any {
	out := map[string]any{}
	for k, val := range vals {
		parts := strings.Split(k, ".")
		m := out
		for _, p := range parts[:len(parts)-1] {
			sub, ok := m[p].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[p] = sub
			}
			m = sub
		}
		m[parts[len(parts)-1]] = val
	}
	return out
}

// decodeFile decodes YAML src strictly for the struct type t and returns
// the leaves it sets. Errors carry file:line and the dotted key.
func decodeFile(t reflect.Type, file string, src []byte) (map[string]any, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	out := map[string]any{}
	if len(doc.Content) == 0 {
		return out, nil // empty file: all defaults
	}
	return out, decodeNode(t, doc.Content[0], file, "", out)
}

// decodeValue decodes val for the dotted key k of the struct type t — a
// string key takes it verbatim, any other as YAML — and returns the leaves
// it sets (one, or those a mapping gives a section). origin names the
// source in errors.
func decodeValue(t reflect.Type, k, val, origin string) (map[string]any, error) {
	parts := strings.Split(k, ".")
	for i, p := range parts {
		if t.Kind() != reflect.Struct || hasUnmarshaler(t) {
			return nil, fmt.Errorf("%s: key %q: %q is not a section", origin, k, strings.Join(parts[:i], "."))
		}
		fields := yamlFields(t)
		idx, ok := fields[p]
		if !ok {
			return nil, fmt.Errorf("%s: unknown key %q (valid keys under %q: %s)", origin, k, keyName(strings.Join(parts[:i], ".")), strings.Join(sortedKeys(fields), ", "))
		}
		t = t.FieldByIndex(idx).Type
	}
	out := map[string]any{}
	if t.Kind() == reflect.String {
		out[k] = reflect.ValueOf(val).Convert(t).Interface()
		return out, nil
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(val), &n); err != nil {
		return nil, fmt.Errorf("%s: key %q: %w", origin, k, err)
	}
	if len(n.Content) == 0 { // an empty value: the zero value
		if t.Kind() == reflect.Struct && !hasUnmarshaler(t) {
			for lk, lv := range leafValues(reflect.New(t).Elem(), k) {
				out[lk] = lv
			}
		} else {
			out[k] = reflect.Zero(t).Interface()
		}
		return out, nil
	}
	if err := decodeNode(t, n.Content[0], origin, k, out); err != nil {
		// decodeNode formats as origin:line; drop the line for flags.
		return nil, errors.New(strings.Replace(err.Error(), origin+":1:", origin+":", 1))
	}
	return out, nil
}

// decodeNode decodes the YAML node n for a value of type t at the dotted
// key, refusing unknown keys and keys given twice, and records each leaf it sets in out. A null
// leaves a struct, or a scalar, to the sources below (yaml.v3 leaves such a
// value as it was).
func decodeNode(t reflect.Type, n *yaml.Node, file, key string, out map[string]any) error {
	if t.Kind() == reflect.Struct && !hasUnmarshaler(t) {
		if n.Kind != yaml.MappingNode {
			if n.Tag == "!!null" {
				return nil
			}
			return fmt.Errorf("%s:%d: key %q: want a mapping, got %s", file, n.Line, keyName(key), n.ShortTag())
		}
		fields := yamlFields(t)
		seen := map[string]int{} // key → line, so a key given twice is refused
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := n.Content[i], n.Content[i+1]
			sub := joinKey(key, kn.Value)
			if first, dup := seen[kn.Value]; dup {
				return fmt.Errorf("%s:%d: key %q is given twice (first at line %d); give each key once", file, kn.Line, sub, first)
			}
			seen[kn.Value] = kn.Line
			idx, ok := fields[kn.Value]
			if !ok {
				return fmt.Errorf("%s:%d: unknown key %q (valid keys here: %s)", file, kn.Line, sub, strings.Join(sortedKeys(fields), ", "))
			}
			if err := decodeNode(t.FieldByIndex(idx).Type, vn, file, sub, out); err != nil {
				return err
			}
		}
		return nil
	}
	if n.Tag == "!!null" {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
			out[key] = reflect.Zero(t).Interface()
		}
		return nil
	}
	if err := checkIntegers(t, n); err != nil {
		return fmt.Errorf("%s:%d: key %q: %w", file, n.Line, keyName(key), err)
	}
	// Leaves, lists and maps: decode with KnownFields so nested structs in
	// lists are strict too.
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(n); err != nil {
		return fmt.Errorf("%s:%d: key %q: %w", file, n.Line, keyName(key), err)
	}
	dec := yaml.NewDecoder(&buf)
	dec.KnownFields(true)
	nv := reflect.New(t)
	if err := dec.Decode(nv.Interface()); err != nil {
		return fmt.Errorf("%s:%d: key %q: %s", file, n.Line, keyName(key), cleanYAMLErr(err))
	}
	out[key] = nv.Elem().Interface()
	return nil
}

func hasUnmarshaler(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem())
}

func cleanYAMLErr(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "yaml: unmarshal errors:\n")
	s = strings.TrimSpace(s)
	if i := strings.Index(s, ": "); strings.HasPrefix(s, "line ") && i > 0 {
		s = s[i+2:]
	}
	return s
}

func keyName(k string) string {
	if k == "" {
		return "(top level)"
	}
	return k
}

func joinKey(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// yamlFields maps yaml key → field index for a struct type, following
// inline embedded structs.
func yamlFields(t reflect.Type) map[string][]int {
	out := map[string][]int{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			for k, idx := range yamlFields(f.Type) {
				out[k] = append([]int{i}, idx...)
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = []int{i}
	}
	return out
}

func sortedKeys(m map[string][]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// checkIntegers refuses a YAML number that is not a whole number for an
// integer type (yaml.v3 would truncate 2.5 to 2): 1e3 and 4.0 are the
// integers they equal, 2.5, 1e-3 and .inf are errors. It looks into
// lists and maps of integers too.
func checkIntegers(t reflect.Type, n *yaml.Node) error {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!float" {
			return nil
		}
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
			return fmt.Errorf("%s is not an integer (this key takes a whole number)", n.Value)
		}
		// Give yaml.v3 the integer it equals.
		n.Value, n.Tag = strconv.FormatInt(int64(f), 10), "!!int"
	case reflect.Pointer:
		return checkIntegers(t.Elem(), n)
	case reflect.Slice, reflect.Array:
		if n.Kind == yaml.SequenceNode {
			for _, e := range n.Content {
				if err := checkIntegers(t.Elem(), e); err != nil {
					return err
				}
			}
		}
	case reflect.Map:
		if n.Kind == yaml.MappingNode {
			for i := 1; i < len(n.Content); i += 2 {
				if err := checkIntegers(t.Elem(), n.Content[i]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// quotedKey finds the config keys an error names ("key \"a.b\"").
var quotedKey = regexp.MustCompile(`"([a-z0-9_]+(?:\.[a-z0-9_]+)*)"`)

// blame prefixes each "; "-separated part of a Validate error with the
// source of the first key it names that a source set (FILE:LINE, --set
// KEY, ARGRL_…), so a bad --set value is not blamed on the file; a part
// naming no such key keeps the file's name, as before.
func blame(err error, file string, origins map[string]string) error {
	msg, ok := strings.CutPrefix(err.Error(), "invalid config: ")
	if !ok {
		if file != "" {
			return fmt.Errorf("%s: %w", file, err)
		}
		return err
	}
	parts := strings.Split(msg, "; ")
	for i, p := range parts {
		src := file
		for _, m := range quotedKey.FindAllStringSubmatch(p, -1) {
			if o, ok := origins[m[1]]; ok {
				src = o
				break
			}
		}
		if src != "" {
			parts[i] = src + ": " + p
		}
	}
	return fmt.Errorf("invalid config: %s", strings.Join(parts, "; "))
}

// Keys lists every config key (dotted, as --set takes it), sorted.
func Keys() []string {
	ks := make([]string, 0, 128)
	for k := range leafValues(reflect.ValueOf(Default()), "") {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
