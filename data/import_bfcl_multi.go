package data

// BFCL's multi-turn categories (BFCL_v4_multi_turn_base.json, _long_context,
// _miss_param, _miss_func): a dialogue of user turns over stateful classes
// (involved_classes, initial_config); the possible answer is, per user
// turn, the list of calls BFCL executes ("cd(folder='document')", ...).
//
// An entry imports when argrl simulates every class it involves
// (internal/bfclsim: MathAPI) and its tools stay the same all along; the
// others are left out, counted by reason in ImportStats.Notes (a class
// argrl does not simulate; functions withheld until a later turn, as
// miss_func does). An imported entry becomes a multi-turn record (turns.go):
//
//	tools     the function documents of its classes (multi_turn_func_doc/,
//	          next to the question file), without excluded_function
//	messages  the first user turn; later user turns are turns[i].user
//	turns     per user turn, one assistant turn per gold call, in order (a
//	          later call may need an earlier result), then one without calls
//	          (the answer); a user turn without gold calls is one such turn
//	env       {"name": "bfcl", "config": {"involved_classes", "initial_config"}}
//
// A gold call that passes an argument by position is named after the
// function document's parameter order (counted as a quirk).

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/argrl/argrl/data/internal/pylit"
	bfclck "github.com/argrl/argrl/internal/bfcl"
	"github.com/argrl/argrl/internal/bfclsim"
)

const (
	quirkPositional = "a gold call passes an argument by position: named after the function document's parameter order"
	reasonMissFunc  = "withholds functions until a later turn (miss_func): a record's tools are fixed"
)

// isBFCLMultiTurn reports whether the question file holds multi-turn
// entries (by its name, or its first entry's id).
func isBFCLMultiTurn(path string, items []item) bool {
	if strings.Contains(bfclCategory("", path), "multi_turn") {
		return true
	}
	if len(items) == 0 {
		return false
	}
	var head struct {
		ID string `json:"id"`
	}
	json.Unmarshal(items[0].Raw, &head)
	return strings.HasPrefix(head.ID, "multi_turn")
}

type bfclMultiEntry struct {
	ID             string              `json:"id"`
	Question       [][]Message         `json:"question"`
	InitialConfig  json.RawMessage     `json:"initial_config"`
	Classes        []string            `json:"involved_classes"`
	Excluded       []string            `json:"excluded_function"`
	MissedFunction map[string][]string `json:"missed_function"`
}

func importBFCLMultiTurn(path string, items []item, opts ImportOptions) ([]Record, ImportStats, error) {
	if opts.Answers == "" {
		return nil, ImportStats{}, fmt.Errorf("data: %s: BFCL multi-turn entries need their possible_answer file (--answers)", path)
	}
	answers, _, err := readBFCLAnswers(opts.Answers)
	if err != nil {
		return nil, ImportStats{}, err
	}
	docs := &bfclDocs{dir: filepath.Join(filepath.Dir(path), "multi_turn_func_doc"), raw: map[string][]json.RawMessage{}}
	skipped, quirks := map[string]int{}, map[string]int{}
	recs, st, err := convertAll(path, items, opts, func(it item) ([]Record, error) {
		var e bfclMultiEntry
		if err := json.Unmarshal(it.Raw, &e); err != nil {
			return nil, err
		}
		if e.ID == "" {
			return nil, fmt.Errorf("id: missing")
		}
		if len(e.Classes) == 0 {
			return nil, fmt.Errorf("%s: involved_classes: missing", e.ID)
		}
		var unsim []string
		for _, c := range e.Classes {
			if !bfclsim.Supported(c) {
				unsim = append(unsim, c)
			}
		}
		if len(unsim) > 0 {
			slices.Sort(unsim)
			skipped["involves "+strings.Join(unsim, ", ")+", which argrl does not simulate (stateful programs)"]++
			return nil, nil
		}
		if len(e.MissedFunction) > 0 {
			skipped[reasonMissFunc]++
			return nil, nil
		}
		rec, n, err := e.record(docs, answers, opts.Lang)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.ID, err)
		}
		if n > 0 {
			quirks[quirkPositional] += n
		}
		return []Record{rec}, nil
	})
	if err != nil {
		return nil, st, err
	}
	for _, r := range sortedKeys(skipped) {
		st.Notes = append(st.Notes, fmt.Sprintf("%d items left out: %s", skipped[r], r))
	}
	if st.Records > 0 {
		st.Notes = append(st.Notes, fmt.Sprintf("%d multi-turn records (env bfcl): one assistant turn per gold call, each user turn closed by an answer without calls", st.Records))
	}
	if len(quirks) > 0 {
		st.Quirks = quirks
	}
	return recs, st, nil
}

// record converts a simulated entry; it returns the number of positional
// arguments it named.
func (e *bfclMultiEntry) record(docs *bfclDocs, answers map[string]json.RawMessage, lang string) (Record, int, error) {
	var fns []json.RawMessage
	for _, c := range e.Classes {
		raw, err := docs.class(c)
		if err != nil {
			return Record{}, 0, err
		}
		for _, f := range raw {
			var head struct {
				Name string `json:"name"`
			}
			json.Unmarshal(f, &head)
			if !slices.Contains(e.Excluded, head.Name) {
				fns = append(fns, f)
			}
		}
	}
	list, _ := json.Marshal(fns)
	tools, err := bfclTools(list, bfclck.Python)
	if err != nil {
		return Record{}, 0, fmt.Errorf("function documents: %w", err)
	}
	gt, ok := answers[e.ID]
	if !ok {
		return Record{}, 0, fmt.Errorf("no possible answer")
	}
	var gold [][]string
	if err := json.Unmarshal(gt, &gold); err != nil {
		return Record{}, 0, fmt.Errorf("ground_truth: want a list of lists of call strings")
	}
	if len(gold) != len(e.Question) || len(e.Question) == 0 {
		return Record{}, 0, fmt.Errorf("%d user turns, %d ground-truth turns", len(e.Question), len(gold))
	}
	params := bfclFunctions(list)
	rec := Record{ID: e.ID, Lang: lang, Tools: tools, Calls: []Call{}}
	positional := 0
	for k, q := range e.Question {
		var parts []string
		for _, m := range q {
			if m.Role != "user" {
				return Record{}, 0, fmt.Errorf("question[%d]: a %q message (want user turns)", k, m.Role)
			}
			parts = append(parts, m.Content)
		}
		if len(parts) == 0 {
			return Record{}, 0, fmt.Errorf("question[%d]: an empty turn", k)
		}
		user := strings.Join(parts, "\n\n")
		if k == 0 {
			rec.Messages = []Message{{Role: "user", Content: user}}
			user = ""
		}
		for j, s := range gold[k] {
			c, n, err := parseGoldCall(s, params)
			if err != nil {
				return Record{}, 0, fmt.Errorf("ground_truth[%d][%d] %q: %w", k, j, s, err)
			}
			positional += n
			rec.Turns = append(rec.Turns, Turn{User: user, Calls: []Call{c}})
			user = ""
		}
		rec.Turns = append(rec.Turns, Turn{User: user, Calls: []Call{}})
	}
	rec.Calls = rec.Turns[0].Calls
	cfg, _ := json.Marshal(map[string]any{"involved_classes": e.Classes, "initial_config": e.InitialConfig})
	rec.Env = &EnvSpec{Name: "bfcl", Config: cfg}
	return rec, positional, nil
}

// bfclDocs reads multi_turn_func_doc/<class file> once per class.
type bfclDocs struct {
	dir string
	raw map[string][]json.RawMessage
}

func (d *bfclDocs) class(c string) ([]json.RawMessage, error) {
	if r, ok := d.raw[c]; ok {
		return r, nil
	}
	name, ok := bfclsim.DocFiles[c]
	if !ok {
		return nil, fmt.Errorf("class %s has no function document file", c)
	}
	p := filepath.Join(d.dir, name)
	if _, err := os.Stat(p); err != nil {
		return nil, fmt.Errorf("the function documents of %s: %w (BFCL's data/multi_turn_func_doc must be next to the question file)", c, err)
	}
	items, err := readItems(p)
	if err != nil {
		return nil, err
	}
	var out []json.RawMessage
	for _, it := range items {
		out = append(out, it.Raw)
	}
	d.raw[c] = out
	return out, nil
}

// parseGoldCall reads a ground-truth call "f(a=1, 'x')": Python literals,
// keyword or positional arguments (named from params' declaration order).
func parseGoldCall(s string, fns map[string]bfclFunction) (Call, int, error) {
	s = strings.TrimSpace(s)
	open := strings.IndexByte(s, '(')
	if open <= 0 || !strings.HasSuffix(s, ")") {
		return Call{}, 0, fmt.Errorf("not a call f(...)")
	}
	name := strings.TrimSpace(s[:open])
	fn, ok := fns[name]
	if !ok {
		return Call{}, 0, fmt.Errorf("function %s is not among the tools", name)
	}
	args, err := splitArgs(s[open+1 : len(s)-1])
	if err != nil {
		return Call{}, 0, err
	}
	positional := 0
	for i, a := range args {
		if keyword(a) {
			continue
		}
		if i >= len(fn.props.Keys) {
			return Call{}, 0, fmt.Errorf("argument %d has no parameter", i+1)
		}
		args[i] = fn.props.Keys[i] + "=" + a
		positional++
	}
	src := "[" + name + "(" + strings.Join(args, ", ") + ")]"
	calls, err := pylit.ParseList(src, 0, len(src))
	if err != nil {
		return Call{}, 0, err
	}
	c := Call{Name: name, Arguments: map[string]any{}}
	for _, a := range calls[0].Args {
		c.Arguments[a.Name] = a.Value
	}
	return c, positional, nil
}

// keyword reports whether an argument's text starts with name=.
func keyword(a string) bool {
	i := strings.IndexByte(a, '=')
	if i <= 0 {
		return false
	}
	for _, r := range strings.TrimSpace(a[:i]) {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return strings.TrimSpace(a[:i]) != ""
}

// splitArgs splits an argument list at its top-level commas (outside
// brackets and string literals).
func splitArgs(s string) ([]string, error) {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unbalanced %q", c)
			}
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	if quote != 0 || depth != 0 {
		return nil, fmt.Errorf("unterminated string or bracket")
	}
	if last := strings.TrimSpace(s[start:]); last != "" {
		out = append(out, last)
	} else if len(out) > 0 {
		return nil, fmt.Errorf("empty argument")
	}
	return out, nil
}
