package data

// Multi-turn records (docs/contracts.md §1, an optional extension): a record
// whose gold is a sequence of assistant turns, executed by an environment.
//
//	"turns": [{"calls": [{"name": "find_restaurants", "arguments": {...}}]},
//	          {"calls": [{"name": "reserve_table", "arguments": {"restaurant": "<from turn 0's result>", ...}}]},
//	          {"user": "And one more thing ...", "calls": [...]},
//	          {"calls": []}],
//	"env": {"name": "synth", "seed": 1234}
//
//   - turns[i].calls are the gold calls of the episode's i-th assistant
//     turn; [] means the turn answers without calling (the last turn of a
//     synthetic dialogue: the final answer).
//   - turns[i].user, optional, is a user message that comes before turn i
//     (a dialogue that asks a new question after an answer, as BFCL's
//     multi-turn categories do); turns[0] has none, its user message is the
//     last of messages.
//   - calls must equal turns[0].calls, and accept and smv refer to them, so
//     a reader that ignores turns sees a valid single-turn record whose gold
//     is the first step.
//   - env, optional, names the environment that executes the calls (synth:
//     the simulated APIs of data/synth) with its seed and, verbatim, any
//     environment-specific config object.
//
// Records without these keys are unchanged: the extension is backward
// compatible.

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/argrl/argrl/internal/jsonx"
)

// Turn is the gold of one assistant turn of a multi-turn record.
type Turn struct {
	// User, when set, is a user message that comes before this turn.
	User string `json:"user,omitempty"`
	// Calls are the turn's gold calls; empty means no call.
	Calls []Call `json:"calls"`
}

// EnvSpec names the environment of a multi-turn record and its settings.
type EnvSpec struct {
	Name string `json:"name"`
	// Seed is the simulated world's seed: the same seed gives the same
	// results to the same calls.
	Seed uint64 `json:"seed,omitempty"`
	// Config holds environment-specific settings (a JSON object), kept
	// verbatim.
	Config json.RawMessage `json:"config,omitempty"`
}

// UserTurns lists the user messages the record's turns add, in order.
func (r *Record) UserTurns() []string {
	var out []string
	for _, t := range r.Turns {
		if t.User != "" {
			out = append(out, t.User)
		}
	}
	return out
}

func decTurns(raw json.RawMessage) ([]Turn, error) {
	items, err := decArray(raw, "turns")
	if err != nil {
		return nil, err
	}
	out := make([]Turn, 0, len(items))
	for i, it := range items {
		p := fmt.Sprintf("turns[%d]", i)
		m, err := decObject(it, p, "user", "calls")
		if err != nil {
			return nil, err
		}
		var t Turn
		if u, ok := m["user"]; ok {
			if t.User, err = decString(u, p+".user", true); err != nil {
				return nil, err
			}
		}
		c, ok := m["calls"]
		if !ok {
			return nil, fieldErr(p+".calls", "missing (use [] for a turn without calls)")
		}
		if t.Calls, err = decCalls(c, p+".calls"); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func decEnv(raw json.RawMessage) (*EnvSpec, error) {
	m, err := decObject(raw, "env", "name", "seed", "config")
	if err != nil {
		return nil, err
	}
	e := &EnvSpec{}
	n, ok := m["name"]
	if !ok {
		return nil, fieldErr("env.name", "missing")
	}
	if e.Name, err = decString(n, "env.name", false); err != nil {
		return nil, err
	}
	if s, ok := m["seed"]; ok && !isNull(s) {
		if err := want(s, "env.seed", "number"); err != nil {
			return nil, err
		}
		if e.Seed, err = strconv.ParseUint(string(s), 10, 64); err != nil {
			return nil, fieldErr("env.seed", "must be an integer in [0, 2^64), got %s", s)
		}
	}
	if c, ok := m["config"]; ok && !isNull(c) {
		if err := want(c, "env.config", "object"); err != nil {
			return nil, err
		}
		e.Config = compact(c)
	}
	return e, nil
}

// validateTurns checks turns and env (see the file comment).
func (r *Record) validateTurns(schemas map[string]*Schema) error {
	if r.Turns != nil {
		if len(r.Turns) == 0 {
			return fieldErr("turns", "empty (omit it for a single-turn record)")
		}
		if r.Turns[0].User != "" {
			return fieldErr("turns[0].user", "the first turn answers the last message; its user message belongs in messages")
		}
		for i, t := range r.Turns {
			if t.Calls == nil {
				return fieldErr(fmt.Sprintf("turns[%d].calls", i), "missing (use [] for a turn without calls)")
			}
			for j, c := range t.Calls {
				if err := validateCall(c, fmt.Sprintf("turns[%d].calls[%d]", i, j), schemas); err != nil {
					return err
				}
			}
		}
		if !sameCalls(r.Calls, r.Turns[0].Calls) {
			return fieldErr("calls", "must equal turns[0].calls (the gold of the first turn)")
		}
	}
	if e := r.Env; e != nil {
		if strings.TrimSpace(e.Name) == "" || strings.TrimSpace(e.Name) != e.Name {
			return fieldErr("env.name", "must be a non-empty name without surrounding spaces, got %q", e.Name)
		}
		if len(e.Config) > 0 && kindOf(e.Config) != "object" {
			return fieldErr("env.config", "must be an object, got %s", kindOf(e.Config))
		}
	}
	return nil
}

// sameCalls reports whether a and b hold the same calls in the same order
// (numbers compared as float64).
func sameCalls(a, b []Call) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || len(a[i].Arguments) != len(b[i].Arguments) {
			return false
		}
		for k, v := range a[i].Arguments {
			w, ok := b[i].Arguments[k]
			if !ok || !jsonx.Equal(v, w) {
				return false
			}
		}
	}
	return true
}
