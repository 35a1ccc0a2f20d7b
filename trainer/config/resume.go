package config

// A resumed run is the run it continues (docs/contracts.md §7–§8). The
// config a run recorded is RUN/config.yaml, written once by its first
// start and never rewritten, plus the changes later resumes were allowed
// to make, appended to RUN/config.history as YAML documents:
//
//	--- # 2026-12-02T09:12:44Z: resumed from step-000003
//	# optim.max_steps: 3 → 6 (--set optim.max_steps)
//	optim.max_steps: 6
//
// LoadResume reloads it (no --config needed), lays ARGRL_* and --set (or
// a --config file given anyway) over it, and refuses any key that then
// differs, unless the key is one of ResumeSafe or --allow-config-change
// names it.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/argrl/argrl/trainer/ckpt"
)

// File and HistoryFile are the recorded config's files in RUN/.
const (
	File        = "config.yaml"
	HistoryFile = "config.history"
)

// ResumeSafe are the keys a resumed run may change without
// --allow-config-change: how long it runs, how often it validates and
// checkpoints, how many checkpoints it keeps, and how the data-parallel
// job is laid out (dist.shares changes the float32 rounding of the sums;
// the run prints a note). run.dir and checkpoint.resume_from are not the
// run's config but where and from which checkpoint it continues.
var ResumeSafe = []string{
	"optim.max_steps", "eval_every", "data.val_max",
	"checkpoint.every", "checkpoint.keep_last", "checkpoint.fallback",
	"dist.shares", "dist.timeout_s",
}

// notRecorded are the keys a diff of two runs' configs ignores.
var notRecorded = []string{"run.dir", "checkpoint.resume_from"}

// A Change is one key whose value differs between two configs, the values
// formatted as JSON ("" is the empty string).
type Change struct {
	Key, Old, New string
	Origin        string // where New came from (FILE:LINE, --set KEY, ARGRL_…); "" when not known
}

func (ch Change) String() string {
	s := fmt.Sprintf("%s: %s → %s", ch.Key, ch.Old, ch.New)
	if ch.Origin != "" {
		s += " (" + ch.Origin + ")"
	}
	return s
}

// Diff lists the keys whose values differ from old to new, in key order,
// run.dir and checkpoint.resume_from left out. A nil and an empty list are
// the same. Each change carries new's origin of the key when Load gave it.
func Diff(old, new Config) []Change {
	ov := leafValues(reflect.ValueOf(old), "")
	nv := leafValues(reflect.ValueOf(new), "")
	var out []Change
	for k, n := range nv {
		if slices.Contains(notRecorded, k) {
			continue
		}
		a, b := formatValue(ov[k]), formatValue(n)
		if a != b {
			out = append(out, Change{Key: k, Old: a, New: b, Origin: new.origins[k]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// formatValue is v as compact JSON, a nil list or map as an empty one.
func formatValue(v any) string {
	rv := reflect.ValueOf(v)
	if rv.IsValid() && (rv.Kind() == reflect.Slice || rv.Kind() == reflect.Map) && rv.IsNil() {
		v = reflect.MakeSlice(reflect.SliceOf(rv.Type().Elem()), 0, 0).Interface()
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // NaN, ±Inf
		return fmt.Sprint(v)
	}
	return strings.TrimSpace(b.String())
}

// Recorded reads the config the run in dir recorded: dir/config.yaml with
// the changes of dir/config.history, without ARGRL_ variables, and with
// checkpoint.resume_from cleared. found is false when dir has no
// config.yaml.
func Recorded(dir string) (c Config, found bool, err error) {
	path := filepath.Join(dir, File)
	src, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Default(), false, nil
	}
	if err != nil {
		return Default(), false, fmt.Errorf("config: %w", err)
	}
	sets, err := historySets(filepath.Join(dir, HistoryFile))
	if err != nil {
		return Default(), true, err
	}
	c, _, err = loadSource(path, src, sets, false)
	if err != nil {
		return c, true, fmt.Errorf("the recorded config: %w", err)
	}
	c.Checkpoint.ResumeFrom = ""
	c.origins, c.file = nil, ""
	return c, true, nil
}

// historySets reads config.history (absent: none) as key=value sets in
// file order, a later change of a key overriding an earlier one.
func historySets(path string) ([]string, error) {
	src, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var sets []string
	dec := yaml.NewDecoder(bytes.NewReader(src))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return sets, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(doc.Content) == 0 {
			continue
		}
		m := doc.Content[0]
		if m.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s:%d: want a mapping of changed keys", path, m.Line)
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i].Value, m.Content[i+1]
			val := v.Value
			if v.Kind != yaml.ScalarNode {
				b, err := yaml.Marshal(v)
				if err != nil {
					return nil, fmt.Errorf("%s:%d: key %q: %w", path, v.Line, k, err)
				}
				val = string(b)
			}
			sets = append(sets, k+"="+val)
		}
	}
}

// LoadResume loads the config of a resumed run: the run's recorded config
// (Recorded; run.dir from --set, ARGRL_RUN_DIR or the file at path), or
// the file at path when one is given, then ARGRL_* and sets. Every key
// that then differs from the recorded config is refused, one per line as
// old → new, unless it is in ResumeSafe or allow names it or its section.
// A run directory without config.yaml is loaded as Load does when path is
// given (the checkpoint claim then decides), and is an error otherwise.
func LoadResume(path string, sets, allow []string) (Config, error) {
	probe := Default()
	var src []byte
	if path != "" {
		var err error
		if src, err = os.ReadFile(path); err != nil {
			return probe, fmt.Errorf("config: %w", err)
		}
		if src == nil {
			src = []byte{}
		}
	}
	if _, err := loadInto(&probe, path, src, sets, true); err != nil {
		return probe, err
	}
	for _, a := range allow {
		if !knownKey(a) {
			return probe, fmt.Errorf("--allow-config-change %q names no config key or section", a)
		}
	}
	dir := probe.Run.Dir
	rec, found, err := Recorded(dir)
	if err != nil {
		return rec, fmt.Errorf("resume: %w", err)
	}
	if !found {
		if path != "" {
			return Load(path, sets)
		}
		return rec, fmt.Errorf("resume: %s has no %s, so there is no run there to continue: name the run with --set run.dir=RUN, or give --config F", dir, File)
	}
	var cur Config
	if path != "" {
		cur, _, err = load(path, sets)
	} else {
		var yb []byte
		if yb, err = yaml.Marshal(rec); err == nil {
			name := filepath.Join(dir, File)
			cur, _, err = loadSource(name, yb, sets, true)
			for k, o := range cur.origins {
				if strings.HasPrefix(o, name+":") {
					cur.origins[k] = "" // the recorded value; its line is not the file's
				}
			}
		}
	}
	if err != nil {
		return cur, err
	}
	if (cur.Algo == "grpo" || cur.Algo == "ppo") && rec.LoRA.Dropout == 0 {
		cur.LoRA.Dropout = 0 // RL records the 0 it trains with, whatever lora.dropout says (the RL recipe zeroes it)
	}
	var refused []string
	for _, ch := range Diff(rec, cur) {
		if !slices.Contains(ResumeSafe, ch.Key) && !allowed(allow, ch.Key) {
			if ch.Origin == "" && path != "" {
				ch.Origin = "not in " + path + ": the default"
			}
			refused = append(refused, "  "+ch.String())
		}
	}
	if len(refused) > 0 {
		src := "--set and ARGRL_ values"
		if path != "" {
			src = "--config " + path + ", --set and ARGRL_ values"
		}
		return cur, fmt.Errorf("resume: the config differs from the one %s recorded (%s, %s):\n%s\n"+
			"a resumed run continues its own config: leave out the %s that change it\n"+
			"(train %s --resume --set run.dir=%s reloads it), or accept a change with --allow-config-change KEY;\n"+
			"keys safe to change on resume: %s",
			dir, File, HistoryFile, strings.Join(refused, "\n"), src, cur.Algo, dir, strings.Join(ResumeSafe, ", "))
	}
	return cur, nil
}

// allowed reports whether key is one of allow or in a section allow names.
func allowed(allow []string, key string) bool {
	for _, a := range allow {
		if key == a || strings.HasPrefix(key, a+".") {
			return true
		}
	}
	return false
}

// knownKey reports whether k is a config key or section.
func knownKey(k string) bool {
	t := reflect.TypeOf(Config{})
	for _, p := range strings.Split(k, ".") {
		if t.Kind() != reflect.Struct || hasUnmarshaler(t) {
			return false
		}
		idx, ok := yamlFields(t)[p]
		if !ok {
			return false
		}
		t = t.FieldByIndex(idx).Type
	}
	return true
}

// ChangedSince names the keys where c differs from the config the run in
// dir recorded, as "; changed since its config.yaml and config.history:
// k: old → new, ..." for a warning ("" when none, or no run there).
func ChangedSince(dir string, c Config) string {
	rec, found, err := Recorded(dir)
	if err != nil || !found {
		return ""
	}
	var ks []string
	for _, ch := range Diff(rec, c) {
		ks = append(ks, ch.String())
	}
	if len(ks) == 0 {
		return ""
	}
	return "; changed since its config.yaml and config.history: " + strings.Join(ks, ", ")
}

// AppendHistory appends to dir/config.history the keys where c differs
// from the config the run recorded (Recorded), as a resume from the
// checkpoint named from changed them; nothing when none does. dir must
// hold config.yaml.
func AppendHistory(dir, from string, c Config, now time.Time) error {
	rec, found, err := Recorded(dir)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("config: %s has no %s", dir, File)
	}
	changes := Diff(rec, c)
	if len(changes) == 0 {
		return nil
	}
	leaves := leafValues(reflect.ValueOf(c), "")
	var b bytes.Buffer
	fmt.Fprintf(&b, "--- # %s: resumed from %s\n", now.UTC().Format(time.RFC3339), from)
	vals := map[string]any{}
	for _, ch := range changes {
		fmt.Fprintf(&b, "# %s\n", ch)
		vals[ch.Key] = leaves[ch.Key]
	}
	y, err := yaml.Marshal(vals)
	if err != nil {
		return fmt.Errorf("config: %s: %w", HistoryFile, err)
	}
	b.Write(y)
	// Rewritten whole through a temporary file, so that a crash leaves the
	// old history or the new one, never half an entry.
	path := filepath.Join(dir, HistoryFile)
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("config: %w", err)
	}
	if err := ckpt.WriteFileAtomic(path, append(old, b.Bytes()...)); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}
