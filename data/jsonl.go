package data

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/argrl/argrl/internal/atomicfile"
)

// Error is a bad-data error: it names the file, the 1-based line and the
// field (a JSON path such as "calls[0].arguments.amount"). Line is 0 and File
// is empty when the record did not come from a file.
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
	// More are the record's other problems (same file and line), written
	// after the first, one message for the whole record.
	More []Error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d:", e.Line)
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	for _, m := range e.More {
		b.WriteString("; ")
		if m.Field != "" {
			b.WriteString(m.Field)
			b.WriteString(": ")
		}
		b.WriteString(m.Msg)
	}
	return b.String()
}

func fieldErr(field, format string, args ...any) *Error {
	return &Error{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// at stamps file and line onto err when it is an *Error, else wraps it.
func at(err error, file string, line int) error {
	var e *Error
	if errors.As(err, &e) {
		c := *e
		c.File, c.Line = file, line
		return &c
	}
	return &Error{File: file, Line: line, Msg: err.Error()}
}

// ReadFile reads and validates a JSONL dataset. Any malformed line is an
// error naming the file, the line and the field; nothing is skipped except
// blank lines.
func ReadFile(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	return Read(f, path)
}

// MaxBadRecords is how many bad records Read reports before it stops.
const MaxBadRecords = 20

// Read reads and validates JSONL records from r; name is used in errors.
// Record ids must be unique within the stream. A bad record does not stop
// the reading: the error lists every bad record (each with all its
// problems, file:line first), up to MaxBadRecords, one per line.
func Read(r io.Reader, name string) ([]Record, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var recs []Record
	var bad []error
	firstLine := map[string]int{}
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, &Error{File: name, Line: line, Msg: err.Error()}
		}
		if line == 1 {
			b = bytes.TrimPrefix(b, []byte("\ufeff")) // a UTF-8 byte-order mark
		}
		if len(bytes.TrimSpace(b)) > 0 {
			rec, derr := DecodeRecord(b)
			if derr == nil {
				derr = rec.Validate()
			}
			if first, dup := firstLine[rec.ID]; dup && derr == nil {
				derr = &Error{Field: "id", Msg: fmt.Sprintf("duplicate id %q (first on line %d)", rec.ID, first)}
			}
			if derr != nil {
				if bad = append(bad, at(derr, name, line)); len(bad) == MaxBadRecords {
					bad = append(bad, fmt.Errorf("%s: stopped at line %d after %d bad records", name, line, MaxBadRecords))
					return nil, errors.Join(bad...)
				}
			} else {
				firstLine[rec.ID] = line
				recs = append(recs, rec)
			}
		}
		if err == io.EOF {
			if len(bad) > 0 {
				return nil, errors.Join(bad...)
			}
			return recs, nil
		}
	}
}

// WriteFile validates recs and writes them as JSONL, atomically: to a
// temporary file in the same directory, fsynced, then renamed over path.
func WriteFile(path string, recs []Record) error {
	dir := filepath.Dir(path)
	tmp, err := atomicfile.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*") // mode 0666 less the umask
	if err != nil {
		return fmt.Errorf("data: write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if err := Write(tmp, recs); err != nil {
		tmp.Close()
		return fmt.Errorf("data: write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("data: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("data: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("data: write %s: %w", path, err)
	}
	return nil
}

// Write validates recs and writes one JSON object per line to w. Non-ASCII
// and <, >, & are written as is (not \u-escaped).
func Write(w io.Writer, recs []Record) error {
	bw := bufio.NewWriter(w)
	seen := map[string]int{}
	for i := range recs {
		if err := recs[i].Validate(); err != nil {
			return fmt.Errorf("record %d (id %q): %w", i, recs[i].ID, err)
		}
		if j, dup := seen[recs[i].ID]; dup {
			return fmt.Errorf("record %d: duplicate id %q (also record %d)", i, recs[i].ID, j)
		}
		seen[recs[i].ID] = i
		b, err := MarshalRecord(&recs[i])
		if err != nil {
			return fmt.Errorf("record %d (id %q): %w", i, recs[i].ID, err)
		}
		bw.Write(b)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// MarshalRecord encodes one record as a single line of JSON (no newline),
// without HTML escaping. Argument maps are written with sorted keys.
func MarshalRecord(r *Record) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// recordKeys are the keys a record line may carry (docs/contracts.md §1).
var recordKeys = map[string]bool{"id": true, "lang": true, "tools": true, "messages": true,
	"calls": true, "response": true, "accept": true, "smv": true, "reject_reason": true, "reasoning": true, "split": true, "bfcl": true,
	"turns": true, "env": true}

// DecodeRecord decodes one JSON line into a Record, checking JSON types with
// errors that name the field path (every top-level field's problem in one
// *Error). It does not run Validate.
func DecodeRecord(line []byte) (Record, error) {
	var rec Record
	var top map[string]json.RawMessage
	if err := json.Unmarshal(line, &top); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return rec, &Error{Msg: fmt.Sprintf("not valid JSON: %v (at byte %d)", se, se.Offset)}
		}
		if k := kindOf(bytes.TrimSpace(line)); k != "object" {
			return rec, &Error{Msg: "a record must be a JSON object, got " + k}
		}
		return rec, &Error{Msg: "not valid JSON: " + err.Error()}
	}
	if top == nil {
		return rec, &Error{Msg: "a record must be a JSON object, got null"}
	}
	var errs problems
	var unknown []string
	for k := range top {
		if !recordKeys[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		errs.add(fieldErr(k, "unknown field (valid: id, lang, tools, messages, calls, response, accept, smv, reject_reason, reasoning, split, bfcl, turns, env)"))
	}
	for _, k := range []string{"id", "lang", "tools", "messages", "calls"} {
		if _, ok := top[k]; !ok {
			errs.add(fieldErr(k, "missing"))
		}
	}
	var err error
	if raw, ok := top["id"]; ok {
		rec.ID, err = decString(raw, "id", false)
		errs.add(err)
	}
	if raw, ok := top["lang"]; ok {
		rec.Lang, err = decString(raw, "lang", false)
		errs.add(err)
	}
	if raw, ok := top["tools"]; ok {
		rec.Tools, err = decTools(raw)
		errs.add(err)
	}
	if raw, ok := top["messages"]; ok {
		rec.Messages, err = decMessages(raw)
		errs.add(err)
	}
	if raw, ok := top["calls"]; ok {
		rec.Calls, err = decCalls(raw, "calls")
		errs.add(err)
	}
	if raw, ok := top["response"]; ok {
		rec.Response, err = decString(raw, "response", true)
		errs.add(err)
	}
	if raw, ok := top["accept"]; ok && !isNull(raw) {
		rec.Accept, err = decAccept(raw)
		errs.add(err)
	}
	if raw, ok := top["smv"]; ok && !isNull(raw) {
		rec.SMV, err = decSMV(raw)
		errs.add(err)
	}
	if raw, ok := top["reject_reason"]; ok {
		rec.RejectReason, err = decString(raw, "reject_reason", true)
		errs.add(err)
	}
	if raw, ok := top["reasoning"]; ok {
		rec.Reasoning, err = decString(raw, "reasoning", true)
		errs.add(err)
	}
	if raw, ok := top["split"]; ok {
		rec.Split, err = decString(raw, "split", true)
		errs.add(err)
	}
	if raw, ok := top["bfcl"]; ok && !isNull(raw) {
		rec.BFCL, err = decBFCL(raw)
		errs.add(err)
	}
	if raw, ok := top["turns"]; ok && !isNull(raw) {
		rec.Turns, err = decTurns(raw)
		errs.add(err)
	}
	if raw, ok := top["env"]; ok && !isNull(raw) {
		rec.Env, err = decEnv(raw)
		errs.add(err)
	}
	return rec, errs.err()
}

func decBFCL(raw json.RawMessage) (*BFCLCase, error) {
	m, err := decObject(raw, "bfcl", "category", "functions", "ground_truth")
	if err != nil {
		return nil, err
	}
	c := &BFCLCase{}
	cat, ok := m["category"]
	if !ok {
		return nil, fieldErr("bfcl.category", "missing")
	}
	if c.Category, err = decString(cat, "bfcl.category", false); err != nil {
		return nil, err
	}
	fns, ok := m["functions"]
	if !ok {
		return nil, fieldErr("bfcl.functions", "missing")
	}
	c.Functions = compact(fns)
	if gt, ok := m["ground_truth"]; ok && !isNull(gt) {
		c.GroundTruth = compact(gt)
	}
	return c, nil
}

// compact returns raw (already parsed, so valid) without insignificant
// whitespace.
func compact(raw json.RawMessage) json.RawMessage {
	var c bytes.Buffer
	json.Compact(&c, raw)
	return c.Bytes()
}

// kindOf names the JSON kind of a raw value by its first byte.
func kindOf(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

func isNull(raw json.RawMessage) bool { return kindOf(raw) == "null" }

func want(raw json.RawMessage, path, kind string) error {
	if k := kindOf(raw); k != kind {
		return fieldErr(path, "must be %s %s, got %s", article(kind), kind, k)
	}
	return nil
}

func article(kind string) string {
	if kind == "object" || kind == "array" {
		return "an"
	}
	return "a"
}

func decString(raw json.RawMessage, path string, nullOK bool) (string, error) {
	if nullOK && isNull(raw) {
		return "", nil
	}
	if err := want(raw, path, "string"); err != nil {
		return "", err
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fieldErr(path, "%v", err)
	}
	return s, nil
}

func decArray(raw json.RawMessage, path string) ([]json.RawMessage, error) {
	if err := want(raw, path, "array"); err != nil {
		return nil, err
	}
	var a []json.RawMessage
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fieldErr(path, "%v", err)
	}
	return a, nil
}

// decObject decodes an object and rejects keys outside allowed (nil allows all).
func decObject(raw json.RawMessage, path string, allowed ...string) (map[string]json.RawMessage, error) {
	if err := want(raw, path, "object"); err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fieldErr(path, "%v", err)
	}
	if allowed != nil {
		var unknown []string
		for k := range m {
			ok := false
			for _, a := range allowed {
				ok = ok || a == k
			}
			if !ok {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			return nil, fieldErr(path+"."+unknown[0], "unknown field (valid: %s)", strings.Join(allowed, ", "))
		}
	}
	return m, nil
}

func decTools(raw json.RawMessage) ([]Tool, error) {
	items, err := decArray(raw, "tools")
	if err != nil {
		return nil, err
	}
	tools := make([]Tool, 0, len(items))
	for i, it := range items {
		p := fmt.Sprintf("tools[%d]", i)
		m, err := decObject(it, p, "name", "description", "parameters")
		if err != nil {
			return nil, err
		}
		var t Tool
		nameRaw, ok := m["name"]
		if !ok {
			return nil, fieldErr(p+".name", "missing")
		}
		if t.Name, err = decString(nameRaw, p+".name", false); err != nil {
			return nil, err
		}
		if d, ok := m["description"]; ok {
			if t.Description, err = decString(d, p+".description", true); err != nil {
				return nil, err
			}
		}
		if ps, ok := m["parameters"]; ok && !isNull(ps) {
			if err := want(ps, p+".parameters", "object"); err != nil {
				return nil, err
			}
			var c bytes.Buffer
			json.Compact(&c, ps) // the line already parsed, so this cannot fail
			t.Parameters = c.Bytes()
		}
		tools = append(tools, t)
	}
	return tools, nil
}

func decMessages(raw json.RawMessage) ([]Message, error) {
	items, err := decArray(raw, "messages")
	if err != nil {
		return nil, err
	}
	msgs := make([]Message, 0, len(items))
	for i, it := range items {
		p := fmt.Sprintf("messages[%d]", i)
		m, err := decObject(it, p, "role", "content", "tool_calls", "name")
		if err != nil {
			return nil, err
		}
		var msg Message
		r, ok := m["role"]
		if !ok {
			return nil, fieldErr(p+".role", "missing")
		}
		if msg.Role, err = decString(r, p+".role", false); err != nil {
			return nil, err
		}
		if c, ok := m["content"]; ok {
			if msg.Content, err = decString(c, p+".content", true); err != nil {
				return nil, err
			}
		}
		if tc, ok := m["tool_calls"]; ok && !isNull(tc) {
			if msg.ToolCalls, err = decCalls(tc, p+".tool_calls"); err != nil {
				return nil, err
			}
		}
		if n, ok := m["name"]; ok {
			if msg.Name, err = decString(n, p+".name", true); err != nil {
				return nil, err
			}
		}
		msgs = append(msgs, msg)
	}
	return msgs, nil
}

func decCalls(raw json.RawMessage, path string) ([]Call, error) {
	items, err := decArray(raw, path)
	if err != nil {
		return nil, err
	}
	calls := make([]Call, 0, len(items))
	for i, it := range items {
		p := fmt.Sprintf("%s[%d]", path, i)
		m, err := decObject(it, p, "name", "arguments")
		if err != nil {
			return nil, err
		}
		var c Call
		n, ok := m["name"]
		if !ok {
			return nil, fieldErr(p+".name", "missing")
		}
		if c.Name, err = decString(n, p+".name", false); err != nil {
			return nil, err
		}
		a, ok := m["arguments"]
		if !ok {
			return nil, fieldErr(p+".arguments", "missing (use {} for a call without arguments)")
		}
		if err := want(a, p+".arguments", "object"); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(a, &c.Arguments); err != nil {
			return nil, fieldErr(p+".arguments", "%v", err)
		}
		if c.Arguments == nil {
			c.Arguments = map[string]any{}
		}
		calls = append(calls, c)
	}
	return calls, nil
}

func decAccept(raw json.RawMessage) ([]map[string][]any, error) {
	items, err := decArray(raw, "accept")
	if err != nil {
		return nil, err
	}
	out := make([]map[string][]any, 0, len(items))
	for i, it := range items {
		p := fmt.Sprintf("accept[%d]", i)
		m, err := decObject(it, p)
		if err != nil {
			return nil, err
		}
		am := make(map[string][]any, len(m))
		for k, v := range m {
			if err := want(v, p+"."+k, "array"); err != nil {
				return nil, err
			}
			var vals []any
			if err := json.Unmarshal(v, &vals); err != nil {
				return nil, fieldErr(p+"."+k, "%v", err)
			}
			am[k] = vals
		}
		out = append(out, am)
	}
	return out, nil
}

func decSMV(raw json.RawMessage) ([]map[string]SMVDoc, error) {
	items, err := decArray(raw, "smv")
	if err != nil {
		return nil, err
	}
	out := make([]map[string]SMVDoc, 0, len(items))
	for i, it := range items {
		p := fmt.Sprintf("smv[%d]", i)
		m, err := decObject(it, p)
		if err != nil {
			return nil, err
		}
		sm := make(map[string]SMVDoc, len(m))
		for k, v := range m {
			dm, err := decObject(v, p+"."+k, "spec", "mod")
			if err != nil {
				return nil, err
			}
			var d SMVDoc
			if s, ok := dm["spec"]; ok {
				if d.Spec, err = decString(s, p+"."+k+".spec", true); err != nil {
					return nil, err
				}
			}
			if s, ok := dm["mod"]; ok {
				if d.Mod, err = decString(s, p+"."+k+".mod", true); err != nil {
					return nil, err
				}
			}
			sm[k] = d
		}
		out = append(out, sm)
	}
	return out, nil
}
