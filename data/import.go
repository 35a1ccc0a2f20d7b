package data

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ImportOptions configures an importer.
type ImportOptions struct {
	// Answers is BFCL's possible_answer file (required for every category
	// but irrelevance); other importers ignore it.
	Answers string
	// Lang is the ISO 639-1 code written to every record (default "en").
	Lang string
	// SkipBad skips source items that cannot be converted or do not
	// validate, listing each one (file:line and reason) in Stats.Skipped,
	// instead of failing. Off by default: a bad item is a hard error.
	SkipBad bool
	// Progress, when set, is called after each source item is converted
	// with the items done and the items in the file.
	Progress func(done, total int)
}

// ImportStats reports what an importer did.
type ImportStats struct {
	Items   int      // source items read
	Records int      // records written
	Skipped []string // with SkipBad: "file:line: reason" per skipped item
	Notes   []string // items dropped by design (e.g. conversations without tools), with why
	// Quirks counts the known oddities of the source data the importer
	// met and handled, by kind (nil when none).
	Quirks map[string]int
}

// Importer converts one source dataset file into records.
type Importer func(path string, opts ImportOptions) ([]Record, ImportStats, error)

var importers = map[string]Importer{
	"bfcl":     ImportBFCL,
	"xlam":     ImportXLAM,
	"toolace":  ImportToolACE,
	"glaive":   ImportGlaive,
	"openai":   ImportOpenAI,
	"sharegpt": ImportShareGPT,
}

// ImporterNames lists the registered importers, sorted.
func ImporterNames() []string {
	return sortedKeys(importers)
}

// Import runs the importer registered under name.
func Import(name, path string, opts ImportOptions) ([]Record, ImportStats, error) {
	imp, ok := importers[name]
	if !ok {
		return nil, ImportStats{}, fmt.Errorf("data: unknown source %q (valid: %s)", name, strings.Join(ImporterNames(), ", "))
	}
	if opts.Lang == "" {
		opts.Lang = "en"
	}
	if !isLangCode(opts.Lang) {
		return nil, ImportStats{}, fmt.Errorf("data: --lang must be an ISO 639-1 code (two lowercase letters), got %q", opts.Lang)
	}
	recs, st, err := imp(path, opts)
	if err != nil {
		return nil, st, err
	}
	if st.Items == 0 {
		return nil, st, fmt.Errorf("data: %s: no %s items: the file is empty (or holds an empty array)", path, name)
	}
	if len(recs) == 0 {
		why := strings.Join(append(st.Notes, st.Skipped...), "; ")
		return nil, st, fmt.Errorf("data: %s: none of its %d %s items made a record (%s)", path, st.Items, name, why)
	}
	return recs, st, nil
}

// item is one source object with its location.
type item struct {
	Line int // 1-based line where the item starts
	Raw  json.RawMessage
}

// readItems reads a source file that is one JSON array of objects, JSON
// Lines (one object per line; blank lines ignored), or parquet (one item
// per row, told by the file's magic bytes; see readParquet).
func readItems(path string) ([]item, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	if isParquet(f) {
		return readParquet(path, f)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("data: %s: %w", path, err)
	}
	trim := bytes.TrimLeft(b, " \t\r\n\ufeff")
	if len(trim) > 0 && trim[0] == '[' {
		return readArray(path, b)
	}
	var out []item
	for i, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if !json.Valid(line) {
			var v any
			err := json.Unmarshal(line, &v)
			return nil, &Error{File: path, Line: i + 1, Msg: fmt.Sprintf("not valid JSON: %v", err)}
		}
		out = append(out, item{Line: i + 1, Raw: append(json.RawMessage(nil), line...)})
	}
	return out, nil
}

func readArray(path string, b []byte) ([]item, error) {
	lineAt := func(off int64) int { return 1 + bytes.Count(b[:min(int(off), len(b))], []byte("\n")) }
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		return nil, &Error{File: path, Line: 1, Msg: err.Error()}
	}
	var out []item
	for dec.More() {
		off := dec.InputOffset()
		for off < int64(len(b)) && strings.ContainsRune(" \t\r\n,", rune(b[off])) {
			off++
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, &Error{File: path, Line: lineAt(off), Msg: fmt.Sprintf("not valid JSON: %v", err)}
		}
		out = append(out, item{Line: lineAt(off), Raw: raw})
	}
	if _, err := dec.Token(); err != nil {
		return nil, &Error{File: path, Line: lineAt(dec.InputOffset()), Msg: fmt.Sprintf("not valid JSON: %v", err)}
	}
	return out, nil
}

// convertAll runs conv over the items, validating each produced record and
// applying the SkipBad policy. Errors name file and line.
func convertAll(path string, items []item, opts ImportOptions, conv func(it item) ([]Record, error)) ([]Record, ImportStats, error) {
	st := ImportStats{Items: len(items)}
	var out []Record
	var bad []error
	seen := map[string]int{}
	for n, it := range items {
		if opts.Progress != nil && n > 0 {
			opts.Progress(n, len(items))
		}
		recs, err := conv(it)
		if err == nil {
			var errs problems
			for i := range recs {
				if verr := recs[i].Validate(); verr != nil {
					errs.add(&Error{Msg: fmt.Sprintf("record %s: %v", recs[i].ID, verr)})
				}
				if first, dup := seen[recs[i].ID]; dup {
					errs.add(&Error{Msg: fmt.Sprintf("duplicate id %q (first from line %d)", recs[i].ID, first)})
				}
			}
			err = errs.err()
		}
		if err != nil {
			e := at(err, path, it.Line)
			if !opts.SkipBad {
				if bad = append(bad, e); len(bad) == MaxBadRecords {
					bad = append(bad, fmt.Errorf("%s: stopped at item %d of %d after %d bad items", path, n+1, len(items), MaxBadRecords))
					return nil, st, errors.Join(bad...)
				}
				continue
			}
			st.Skipped = append(st.Skipped, e.Error())
			continue
		}
		for _, r := range recs {
			seen[r.ID] = it.Line
		}
		out = append(out, recs...)
	}
	if len(bad) > 0 {
		return nil, st, errors.Join(bad...)
	}
	st.Records = len(out)
	if opts.Progress != nil && len(items) > 0 {
		opts.Progress(len(items), len(items))
	}
	return out, st, nil
}

// typeAliases maps the non-JSON-schema type names found in BFCL, ToolACE and
// Python-flavoured sources to JSON-schema types.
var typeAliases = map[string]string{
	"dict": "object", "float": "number", "double": "number", "int": "integer",
	"str": "string", "bool": "boolean", "tuple": "array", "list": "array",
}

// normalizeSchema rewrites a source parameter schema into JSON schema,
// keeping key order: type aliases (dict→object, float→number, ...) at every
// level, and "required" entries that name no declared property dropped.
func normalizeSchema(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || isNull(raw) {
		return nil, nil
	}
	n, err := parseONode(raw)
	if err != nil {
		return nil, err
	}
	if n.kind != '{' {
		return nil, fmt.Errorf("parameters must be an object, got %s", kindOf(raw))
	}
	normNode(n)
	return n.marshal(), nil
}

func normNode(n *onode) {
	if n.kind != '{' {
		return
	}
	if t := n.field("type"); t != nil {
		normType(t)
	}
	if props := n.field("properties"); props != nil && props.kind == '{' {
		for _, c := range props.vals {
			normNode(c)
		}
		if req := n.field("required"); req != nil && req.kind == '[' {
			kept := req.vals[:0]
			for _, r := range req.vals {
				var name string
				if json.Unmarshal(r.raw, &name) == nil && props.field(name) != nil {
					kept = append(kept, r)
				}
			}
			req.vals = kept
		}
	}
	if items := n.field("items"); items != nil {
		normNode(items)
	}
}

func normType(t *onode) {
	fix := func(n *onode) {
		var s string
		if n.kind == '"' && json.Unmarshal(n.raw, &s) == nil {
			if a, ok := typeAliases[strings.ToLower(s)]; ok {
				n.raw, _ = json.Marshal(a)
			}
		}
	}
	fix(t)
	if t.kind == '[' {
		for _, e := range t.vals {
			fix(e)
		}
	}
}
