package synth

// Multi-turn dialogues are built from chains (chains.json): a request that
// needs 2–4 calls in order, where a later call takes a value from an
// earlier call's simulated result. A chain entry:
//
//	{"name": "dine",
//	 "steps": [{"api": "find_restaurants", "args": {"city": "{city}", ...}},
//	           {"api": "reserve_table", "args": {"restaurant": "$0.restaurants.0.restaurant", ...}}],
//	 "templates": {"en": "Find a {cuisine} restaurant in {city} ...", "es": ..., ...}}
//
// An argument's source is a user slot "{name}" (the value the user says;
// its kind is the argument's where the slot is first used, and every use
// takes the same value) or "$K.path" (a value of step K's result, K earlier:
// dot-separated object keys and list indices). Every required argument of a
// step's API has a source. The template of each language mentions every
// user slot at least once and nothing else.

import (
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
)

// chain is one loaded chains.json entry.
type chain struct {
	name  string
	steps []chainStep
	t     map[string]string // language → template
	slots []string          // user slots, in first-use order
	slot  map[string]Arg    // the argument each slot was first used for
	at    string            // file:line of its entry
}

type chainStep struct {
	api  *API
	args []chainArg // in the API's argument order
}

// chainArg is one argument of a step: a user slot, or a path into the
// result of step from.
type chainArg struct {
	name string
	slot string
	from int
	path []string
}

type chainJSON struct {
	Name  string `json:"name"`
	Steps []struct {
		API  string            `json:"api"`
		Args map[string]string `json:"args"`
	} `json:"steps"`
	Templates map[string]string `json:"templates"`
}

var (
	slotRE = regexp.MustCompile(`^\{([a-z_]+)\}$`)
	fromRE = regexp.MustCompile(`^\$(\d)\.([A-Za-z0-9_.]+)$`)
)

// loadChains reads and checks chains.json against the API table.
func loadChains(fsys fs.FS, name string, apis []*API) ([]*chain, error) {
	b, elems, err := readJSONArray(fsys, name)
	if err != nil {
		return nil, err
	}
	byName := map[string]*API{}
	for _, a := range apis {
		byName[a.Name] = a
	}
	var out []*chain
	seen := map[string]bool{}
	for _, el := range elems {
		pos := at(name, lineAt(b, firstField(el)))
		var j chainJSON
		if err := decodeStrict(el.raw, &j); err != nil {
			return nil, jsonErr(name, b, el.off, err)
		}
		c, err := j.build(pos, byName)
		if err != nil {
			return nil, fmt.Errorf("%s: chain %s: %w", pos, j.Name, err)
		}
		if seen[c.name] {
			return nil, fmt.Errorf("%s: chain %s: duplicate name", pos, c.name)
		}
		seen[c.name] = true
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no chains", name)
	}
	return out, nil
}

func (j *chainJSON) build(pos string, apis map[string]*API) (*chain, error) {
	if !argNameRE.MatchString(j.Name) {
		return nil, fmt.Errorf("the name must be lower-case letters and _ (record ids carry it)")
	}
	if len(j.Steps) < 2 || len(j.Steps) > 4 {
		return nil, fmt.Errorf("%d steps (want 2-4)", len(j.Steps))
	}
	c := &chain{name: j.Name, t: j.Templates, slot: map[string]Arg{}, at: pos}
	for k, s := range j.Steps {
		api := apis[s.API]
		if api == nil {
			return nil, fmt.Errorf("step %d: unknown api %q", k, s.API)
		}
		for name := range s.Args {
			if _, ok := api.arg(name); !ok {
				return nil, fmt.Errorf("step %d: %s has no argument %q", k, api.Name, name)
			}
		}
		st := chainStep{api: api}
		for _, a := range api.Args {
			src, ok := s.Args[a.Name]
			if !ok {
				if a.Required {
					return nil, fmt.Errorf("step %d: required argument %s.%s has no source", k, api.Name, a.Name)
				}
				continue
			}
			ca := chainArg{name: a.Name}
			if m := slotRE.FindStringSubmatch(src); m != nil {
				ca.slot = m[1]
				if first, ok := c.slot[ca.slot]; !ok {
					c.slot[ca.slot] = a
					c.slots = append(c.slots, ca.slot)
				} else if first.Kind != a.Kind || first.Cat != a.Cat {
					return nil, fmt.Errorf("step %d: slot {%s} feeds %s.%s, of another kind than where it is first used", k, ca.slot, api.Name, a.Name)
				}
			} else if m := fromRE.FindStringSubmatch(src); m != nil {
				ca.from, _ = strconv.Atoi(m[1])
				if ca.from >= k {
					return nil, fmt.Errorf("step %d: %s.%s takes %q, not an earlier step's result", k, api.Name, a.Name, src)
				}
				ca.path = strings.Split(m[2], ".")
			} else {
				return nil, fmt.Errorf("step %d: %s.%s: source %q is neither {slot} nor $K.path", k, api.Name, a.Name, src)
			}
			st.args = append(st.args, ca)
		}
		c.steps = append(c.steps, st)
	}
	for l := range j.Templates {
		if langIndex(l) < 0 {
			return nil, fmt.Errorf("template in unknown language %q", l)
		}
	}
	for _, l := range Langs {
		tmpl, ok := j.Templates[l]
		if !ok {
			return nil, fmt.Errorf("no %s template", l)
		}
		ph := map[string]bool{}
		for _, p := range placeholders(tmpl) {
			if _, ok := c.slot[p]; !ok {
				return nil, fmt.Errorf("%s template mentions {%s}, which no step uses", l, p)
			}
			ph[p] = true
		}
		for _, s := range c.slots {
			if !ph[s] {
				return nil, fmt.Errorf("%s template does not mention {%s}", l, s)
			}
		}
	}
	return c, nil
}

// lookup follows a result path through decoded JSON.
func lookup(v any, path []string) (any, bool) {
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[p]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}
