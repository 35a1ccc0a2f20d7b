package synth

// The simulated APIs: what a multi-turn episode's environment answers to
// the benchmark's calls.
//
// A call's result is a pure function of the episode's seed and language,
// the API and its arguments: the same call gets the same answer in every
// episode of that seed, in any order, in any process. What is drawn (ids,
// names, prices, times) depends on the arguments normalized (strings
// trimmed and lower-cased, numbers by value), so 3 and 3.0, or "Madrid"
// and " madrid ", draw alike; a value the result repeats is the argument
// trimmed (an enum value in its canonical case). Searches return
// short lists whose first entry is the one a dialogue asks for (the
// best-rated restaurant, the cheapest flight, the earliest free slot), so a
// later call can take an id, a name or a time from an earlier result.
// Calls that change the world (bookings, messages, payments, ...) succeed
// with a confirmation code and are recorded as effects: the episode's final
// state. A call the API cannot take (unknown API or argument, a missing
// required argument, a value of the wrong type or outside the enum) gets
// an {"error": ...} result and changes nothing.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/argrl/argrl/data"
)

// Sim is one episode of the simulated APIs. Not safe for concurrent use.
type Sim struct {
	seed    uint64
	li      int
	effects []data.Call
}

// NewSim starts an episode of the world seed, for a user speaking lang
// (results that hold user-facing words, such as event titles, are in it).
func NewSim(seed uint64, lang string) (*Sim, error) {
	if builtinErr != nil {
		return nil, builtinErr
	}
	li := langIndex(lang)
	if li < 0 {
		return nil, fmt.Errorf("synth: simulated APIs: unknown language %q (valid: %s)", lang, strings.Join(Langs, ", "))
	}
	return &Sim{seed: seed, li: li}, nil
}

// Effects returns the world-changing calls that succeeded, in call order.
func (s *Sim) Effects() []data.Call { return append([]data.Call(nil), s.effects...) }

// State is the episode's final state: the effects in a canonical order (by
// their normalized text), so two episodes that did the same things in
// another order have the same state.
func (s *Sim) State() []data.Call {
	out := s.Effects()
	sort.SliceStable(out, func(i, j int) bool {
		return callKey(out[i].Name, out[i].Arguments) < callKey(out[j].Name, out[j].Arguments)
	})
	return out
}

// Call executes one call and returns its result as a JSON object.
func (s *Sim) Call(name string, args map[string]any) string {
	api := simAPIs[name]
	if api == nil {
		return errResult("unknown function %q", name)
	}
	vals, err := checkArgs(api, args)
	if err != nil {
		return errResult("%s: %v", name, err)
	}
	key := callKey(name, args)
	h := fnv.New64a()
	h.Write([]byte(key))
	rng := rand.New(rand.NewPCG(mix(s.seed), h.Sum64()))
	res := s.result(api, vals, rng)
	if effectAPIs[name] {
		s.effects = append(s.effects, data.Call{Name: name, Arguments: cloneArgs(args)})
	}
	return res.String()
}

// mix is splitmix64's finalizer, so nearby seeds give unrelated streams.
func mix(z uint64) uint64 {
	z += 0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

var simAPIs = func() map[string]*API {
	m := map[string]*API{}
	for _, a := range builtin.apis {
		m[a.Name] = a
	}
	return m
}()

// effectAPIs change the world; the others only read it.
var effectAPIs = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`book_hotel rent_car book_taxi order_food reserve_table add_to_shopping_list
		leave_review send_message send_email create_group_chat set_status call_contact create_event cancel_event
		invite_to_event send_money pay_bill track_expense create_folder rename_file share_file delete_file
		set_reminder create_todo set_alarm set_timer add_note play_playlist play_music play_podcast
		set_thermostat turn_on_lights lock_door start_vacuum log_workout book_doctor log_meal`) {
		effectAPIs[n] = true
	}
}

// simVal is a checked argument value: its text, and its number for
// numeric arguments.
type simVal struct {
	s string
	n float64
}

// checkArgs validates args against api's schema.
func checkArgs(api *API, args map[string]any) (map[string]simVal, error) {
	out := map[string]simVal{}
	for _, k := range sortedArgNames(args) {
		a, ok := api.arg(k)
		if !ok {
			return nil, fmt.Errorf("unknown argument %q", k)
		}
		v, err := argValue(a, args[k])
		if err != nil {
			return nil, fmt.Errorf("argument %q: %v", k, err)
		}
		out[k] = v
	}
	for _, a := range api.Args {
		if _, ok := out[a.Name]; !ok && a.Required {
			return nil, fmt.Errorf("missing required argument %q", a.Name)
		}
	}
	return out, nil
}

func argValue(a Arg, v any) (simVal, error) {
	if a.schemaType() == "integer" || a.schemaType() == "number" {
		f, ok := number(v)
		if !ok {
			return simVal{}, fmt.Errorf("want a number, got %s", shortJSON(v))
		}
		if a.schemaType() == "integer" && f != math.Trunc(f) {
			return simVal{}, fmt.Errorf("want an integer, got %v", f)
		}
		return simVal{s: strconv.FormatFloat(f, 'f', -1, 64), n: f}, nil
	}
	str, ok := v.(string)
	if !ok {
		return simVal{}, fmt.Errorf("want a string, got %s", shortJSON(v))
	}
	str = strings.TrimSpace(str)
	if ev := a.enumValues(); ev != nil {
		for _, e := range ev {
			if strings.EqualFold(e, str) {
				return simVal{s: e}, nil
			}
		}
		return simVal{}, fmt.Errorf("%q is not one of %s", str, strings.Join(ev, ", "))
	}
	return simVal{s: str}, nil
}

// number reads a JSON-like number: float64, an integer type, json.Number
// or a numeric string.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return 0, false
}

// callKey is a call's normalized text: name, then sorted arguments.
func callKey(name string, args map[string]any) string {
	var b strings.Builder
	b.WriteString(name)
	for _, k := range sortedArgNames(args) {
		b.WriteString("\x00" + k + "=")
		if f, ok := number(args[k]); ok {
			if _, isStr := args[k].(string); !isStr {
				b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
				continue
			}
		}
		if s, ok := args[k].(string); ok {
			b.WriteString(strings.ToLower(strings.TrimSpace(s)))
			continue
		}
		b.WriteString(shortJSON(args[k]))
	}
	return b.String()
}

func sortedArgNames(args map[string]any) []string {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func cloneArgs(args map[string]any) map[string]any {
	out := make(map[string]any, len(args))
	for k, v := range args {
		out[k] = v
	}
	return out
}

func shortJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

func errResult(format string, args ...any) string {
	return obj{{"error", fmt.Sprintf(format, args...)}}.String()
}

// obj is a JSON object with its keys in the order written.
type obj []kv

type kv struct {
	k string
	v any
}

func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSON(&b, f.k)
		b.WriteByte(':')
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(f.v); err != nil {
			return nil, err
		}
		b.Truncate(b.Len() - 1)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// String is the object's JSON text (values here always marshal).
func (o obj) String() string {
	b, err := o.MarshalJSON()
	if err != nil {
		return `{"error":"internal: unencodable result"}`
	}
	return string(b)
}
