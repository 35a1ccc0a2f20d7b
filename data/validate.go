package data

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	bfclck "github.com/argrl/argrl/internal/bfcl"
	"github.com/argrl/argrl/internal/jsonx"
)

// Splits are the values Record.Split may take ("" means unassigned).
var Splits = []string{"train", "validation", "test"}

// nameForbidden are characters a tool or argument name may not contain: they
// would make the pythonic output format ambiguous.
const nameForbidden = "()[]{}=,'\"\\"

// ValidName reports why s is not a valid tool name ("" when it is valid):
// non-empty, no surrounding spaces, no control characters and none of
// ( ) [ ] { } = , ' " \.
func ValidName(s string) string {
	switch {
	case s == "":
		return "empty"
	case strings.TrimSpace(s) != s:
		return "has leading or trailing spaces"
	case strings.ContainsAny(s, nameForbidden):
		return "contains one of " + nameForbidden
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return "contains a control character"
		}
	}
	return ""
}

// ValidArgName is ValidName plus: no whitespace at all (argument names are
// written as keyword arguments in the pythonic format).
func ValidArgName(s string) string {
	if why := ValidName(s); why != "" {
		return why
	}
	if strings.ContainsAny(s, " \t\u00a0") {
		return "contains whitespace"
	}
	return ""
}

// Validate checks a record against docs/contracts.md §1 and returns its
// problems as one *Error naming the first field, the others in its More
// (every problem of the record in one message). Beyond JSON types it checks:
// id and lang (two lowercase letters) present; tool names valid and unique,
// parameter schemas well-formed and of object type; at least one user
// message, roles known, the last message from the user or a tool; every
// call (gold or earlier turn) names a known tool, uses only declared
// parameters and carries every required one; accept and smv have one entry
// per call and only name that call's parameters; each gold value is
// acceptable under accept (an omitted argument needs "" in its list); split
// is "", train, validation or test; a bfcl case has the shape BFCL's checker
// reads (and a relevance category no gold call); turns and env as turns.go
// says; a response only on a record without gold calls.
func (r *Record) Validate() error {
	var errs problems
	if strings.TrimSpace(r.ID) == "" {
		errs.add(fieldErr("id", "empty"))
	}
	if !isLangCode(r.Lang) {
		errs.add(fieldErr("lang", "must be an ISO 639-1 code (two lowercase letters), got %q", r.Lang))
	}
	if r.Tools == nil {
		errs.add(fieldErr("tools", "missing"))
	}
	schemas := make(map[string]*Schema, len(r.Tools))
	for i, t := range r.Tools {
		s, err := validateTool(i, t, schemas)
		errs.add(err)
		if _, dup := schemas[t.Name]; s != nil && !dup {
			schemas[t.Name] = s
		}
	}
	errs.add(r.validateMessages(schemas))
	if r.Calls == nil {
		errs.add(fieldErr("calls", "missing (use [] for no call)"))
	}
	for i, c := range r.Calls {
		errs.add(validateCall(c, fmt.Sprintf("calls[%d]", i), schemas))
	}
	if r.Response != "" && len(r.Calls) > 0 {
		errs.add(fieldErr("response", "a record with gold calls has no text response (response is the answer of a turn without a call)"))
	}
	if len(errs) == 0 { // accept and smv are read against valid calls
		errs.add(r.validateAccept(schemas))
		errs.add(r.validateSMV(schemas))
	}
	switch r.Split {
	case "", "train", "validation", "test":
	default:
		errs.add(fieldErr("split", "must be one of train, validation, test (or empty), got %q", r.Split))
	}
	errs.add(r.validateTurns(schemas))
	if r.BFCL != nil {
		if _, err := bfclck.ParseCase(r.BFCL.Category, r.BFCL.Functions, r.BFCL.GroundTruth); err != nil {
			errs.add(fieldErr("bfcl", "%v", err))
		} else if bfclck.IsRelevance(r.BFCL.Category) && len(r.Calls) > 0 {
			errs.add(fieldErr("calls", "a %s record has no gold call (use [])", r.BFCL.Category))
		}
	}
	return errs.err()
}

// validateTool checks tools[i] (name, unique, schema) and returns its schema.
func validateTool(i int, t Tool, seen map[string]*Schema) (*Schema, error) {
	p := fmt.Sprintf("tools[%d]", i)
	if why := ValidName(t.Name); why != "" {
		return nil, fieldErr(p+".name", "invalid tool name %q: %s", t.Name, why)
	}
	if _, dup := seen[t.Name]; dup {
		return nil, fieldErr(p+".name", "duplicate tool %q", t.Name)
	}
	s, err := t.Schema()
	if err != nil {
		return nil, fieldErr(p+".parameters", "%v", err)
	}
	if len(t.Parameters) > 0 && len(s.Type) > 0 && !s.HasType("object") {
		return s, fieldErr(p+".parameters.type", "must be \"object\", got %q", s.Type)
	}
	for _, prop := range s.Properties {
		if why := ValidArgName(prop.Name); why != "" {
			return s, fieldErr(p+".parameters.properties", "invalid parameter name %q: %s", prop.Name, why)
		}
	}
	return s, nil
}

func (r *Record) validateSMV(schemas map[string]*Schema) error {
	if r.SMV == nil {
		return nil
	}
	if len(r.SMV) != len(r.Calls) {
		return fieldErr("smv", "has %d entries for %d calls (one per call)", len(r.SMV), len(r.Calls))
	}
	for i, m := range r.SMV {
		s := schemas[r.Calls[i].Name]
		for _, k := range sortedKeys(m) {
			if _, inCall := r.Calls[i].Arguments[k]; !inCall && !declared(s, k) {
				return fieldErr(fmt.Sprintf("smv[%d].%s", i, k), "not a parameter of %q", r.Calls[i].Name)
			}
		}
	}
	return nil
}

// problems collects every problem found in one record.
type problems []*Error

func (p *problems) add(err error) {
	if err == nil {
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Msg: err.Error()}
	}
	c := *e
	c.More = nil
	*p = append(*p, &c)
	for i := range e.More {
		*p = append(*p, &e.More[i])
	}
}

// err is nil, the one problem, or the first carrying the others in More.
func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	first := *p[0]
	for _, e := range p[1:] {
		first.More = append(first.More, *e)
	}
	return &first
}

func isLangCode(s string) bool {
	return len(s) == 2 && s[0] >= 'a' && s[0] <= 'z' && s[1] >= 'a' && s[1] <= 'z'
}

func (r *Record) validateMessages(schemas map[string]*Schema) error {
	if len(r.Messages) == 0 {
		return fieldErr("messages", "empty (need at least one user message)")
	}
	users := 0
	for i, m := range r.Messages {
		p := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case "user":
			users++
		case "system", "assistant", "tool":
		default:
			return fieldErr(p+".role", "must be system, user, assistant or tool, got %q", m.Role)
		}
		if len(m.ToolCalls) > 0 && m.Role != "assistant" {
			return fieldErr(p+".tool_calls", "only assistant messages carry tool calls (role is %q)", m.Role)
		}
		for j, c := range m.ToolCalls {
			if err := validateCall(c, fmt.Sprintf("%s.tool_calls[%d]", p, j), schemas); err != nil {
				return err
			}
		}
	}
	if users == 0 {
		return fieldErr("messages", "no user message")
	}
	if last := r.Messages[len(r.Messages)-1].Role; last != "user" && last != "tool" {
		return fieldErr(fmt.Sprintf("messages[%d].role", len(r.Messages)-1),
			"the last message must be from the user or a tool (the gold calls answer it), got %q", last)
	}
	return nil
}

func declared(s *Schema, name string) bool {
	if s == nil || !s.HasProperties {
		return true
	}
	_, ok := s.Property(name)
	return ok
}

func validateCall(c Call, p string, schemas map[string]*Schema) error {
	s, ok := schemas[c.Name]
	if !ok {
		return fieldErr(p+".name", "unknown tool %q (not in tools)", c.Name)
	}
	if c.Arguments == nil {
		return fieldErr(p+".arguments", "missing")
	}
	for _, k := range sortedKeys(c.Arguments) {
		if why := ValidArgName(k); why != "" {
			return fieldErr(p+".arguments", "invalid argument name %q: %s", k, why)
		}
		if !declared(s, k) {
			return fieldErr(p+".arguments."+k, "not a parameter of %q", c.Name)
		}
	}
	for _, req := range s.Required {
		if _, ok := c.Arguments[req]; !ok {
			return fieldErr(p+".arguments."+req, "required by %q but missing", c.Name)
		}
	}
	return nil
}

func (r *Record) validateAccept(schemas map[string]*Schema) error {
	if r.Accept == nil {
		return nil
	}
	if len(r.Accept) != len(r.Calls) {
		return fieldErr("accept", "has %d entries for %d calls (one per call)", len(r.Accept), len(r.Calls))
	}
	for i, m := range r.Accept {
		c := r.Calls[i]
		s := schemas[c.Name]
		for _, k := range sortedKeys(m) {
			p := fmt.Sprintf("accept[%d].%s", i, k)
			opts := m[k]
			if len(opts) == 0 {
				return fieldErr(p, "empty list of acceptable values")
			}
			v, inCall := c.Arguments[k]
			if !inCall && !declared(s, k) {
				return fieldErr(p, "not a parameter of %q", c.Name)
			}
			if inCall {
				if !containsValue(opts, v) {
					return fieldErr(p, "gold value %s of calls[%d] is not among the acceptable values", short(v), i)
				}
			} else if !containsValue(opts, "") {
				return fieldErr(p, "calls[%d] omits %q but \"\" (may be omitted) is not acceptable", i, k)
			}
		}
	}
	return nil
}

// containsValue reports whether v is among opts, numbers compared as
// float64 (so 2 and 2.0 match).
func containsValue(opts []any, v any) bool {
	for _, o := range opts {
		if jsonx.Equal(o, v) {
			return true
		}
	}
	return false
}

func short(v any) string {
	s := fmt.Sprintf("%#v", v)
	if str, ok := v.(string); ok {
		s = fmt.Sprintf("%q", str)
	}
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// sortedKeys lists m's keys in sorted order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
