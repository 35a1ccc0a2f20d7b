package config

// Strict configuration loading (docs/contracts.md §8): defaults come from a Go
// struct, a YAML file overrides them, then ARGRL_* environment variables,
// then --set a.b=c flags. Unknown keys and ill-typed values are errors that
// name the file, the line and the key.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/spf13/viper"
	"gopkg.in/yaml.v3"
)

// EnvPrefix is the prefix of environment overrides: ARGRL_A_B=c sets a.b.
const EnvPrefix = "ARGRL"

// loadInto fills dst (a pointer to a struct holding defaults) from the YAML
// file at path (may be empty), then the environment, then sets ("a.b=c").
func loadInto(dst any, path string, sets []string) error {
	if path != "" {
		src, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("config: %w", err)
		}
		if err := decodeStrict(dst, path, src); err != nil {
			return err
		}
	}
	if err := applyEnv(dst); err != nil {
		return err
	}
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("--set %q: want key=value", s)
		}
		if err := setPath(dst, strings.TrimSpace(k), v, "--set "+strings.TrimSpace(k)); err != nil {
			return err
		}
	}
	return nil
}

// decodeStrict decodes YAML src into dst, refusing unknown keys. Errors
// carry file:line and the dotted key.
func decodeStrict(dst any, file string, src []byte) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if len(doc.Content) == 0 {
		return nil // empty file: all defaults
	}
	return decodeNode(reflect.ValueOf(dst).Elem(), doc.Content[0], file, "")
}

func decodeNode(v reflect.Value, n *yaml.Node, file, key string) error {
	if v.Kind() == reflect.Struct && !hasUnmarshaler(v) {
		if n.Kind != yaml.MappingNode {
			if n.Tag == "!!null" {
				return nil
			}
			return fmt.Errorf("%s:%d: key %q: want a mapping, got %s", file, n.Line, keyName(key), n.ShortTag())
		}
		fields := yamlFields(v.Type())
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := n.Content[i], n.Content[i+1]
			sub := joinKey(key, kn.Value)
			idx, ok := fields[kn.Value]
			if !ok {
				return fmt.Errorf("%s:%d: unknown key %q (valid keys here: %s)", file, kn.Line, sub, strings.Join(sortedKeys(fields), ", "))
			}
			if err := decodeNode(v.FieldByIndex(idx), vn, file, sub); err != nil {
				return err
			}
		}
		return nil
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
	nv := reflect.New(v.Type())
	nv.Elem().Set(v)
	if err := dec.Decode(nv.Interface()); err != nil {
		return fmt.Errorf("%s:%d: key %q: %s", file, n.Line, keyName(key), cleanYAMLErr(err))
	}
	v.Set(nv.Elem())
	return nil
}

func hasUnmarshaler(v reflect.Value) bool {
	_, ok := v.Addr().Interface().(yaml.Unmarshaler)
	return ok
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

// setPath sets the leaf at dotted key k from a YAML scalar/flow value.
func setPath(dst any, k, val, origin string) error {
	v := reflect.ValueOf(dst).Elem()
	parts := strings.Split(k, ".")
	for i, p := range parts {
		if v.Kind() != reflect.Struct || hasUnmarshaler(v) {
			return fmt.Errorf("%s: key %q: %q is not a section", origin, k, strings.Join(parts[:i], "."))
		}
		fields := yamlFields(v.Type())
		idx, ok := fields[p]
		if !ok {
			return fmt.Errorf("%s: unknown key %q (valid keys under %q: %s)", origin, k, keyName(strings.Join(parts[:i], ".")), strings.Join(sortedKeys(fields), ", "))
		}
		v = v.FieldByIndex(idx)
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(val), &n); err != nil {
		return fmt.Errorf("%s: key %q: %w", origin, k, err)
	}
	if len(n.Content) == 0 { // empty value
		v.Set(reflect.Zero(v.Type()))
		return nil
	}
	if err := decodeNode(v, n.Content[0], origin, k); err != nil {
		// decodeNode formats as origin:line; drop the line for flags.
		return errors.New(strings.Replace(err.Error(), origin+":1:", origin+":", 1))
	}
	return nil
}

// leafKeys lists every settable dotted key of a struct type.
func leafKeys(t reflect.Type, prefix string) []string {
	var out []string
	for name, idx := range yamlFields(t) {
		ft := t.FieldByIndex(idx).Type
		k := joinKey(prefix, name)
		if ft.Kind() == reflect.Struct && !reflect.PointerTo(ft).Implements(reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()) {
			out = append(out, leafKeys(ft, k)...)
			continue
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// applyEnv applies ARGRL_* overrides, looked up through viper's environment
// binding (a.b.c ↔ ARGRL_A_B_C). An ARGRL_ variable that names no key is an
// error, so a typo never passes silently.
func applyEnv(dst any) error {
	vp := viper.New()
	vp.SetEnvPrefix(EnvPrefix)
	vp.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	keys := leafKeys(reflect.TypeOf(dst).Elem(), "")
	known := map[string]bool{}
	for _, k := range keys {
		env := EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(k, ".", "_"))
		known[env] = true
		if err := vp.BindEnv(k); err != nil {
			return fmt.Errorf("config: bind %s: %w", k, err)
		}
		if vp.IsSet(k) {
			if err := setPath(dst, k, vp.GetString(k), env); err != nil {
				return err
			}
		}
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, EnvPrefix+"_") && !known[name] && !ignoredEnv[name] {
			return fmt.Errorf("environment: %s names no config key", name)
		}
	}
	return nil
}

// ignoredEnv are ARGRL_ variables that are not config keys.
var ignoredEnv = map[string]bool{"ARGRL_CACHE": true, "ARGRL_LONG": true}
