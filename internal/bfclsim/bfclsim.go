// Package bfclsim simulates the classes of BFCL's multi-turn categories
// that argrl can run without BFCL's Python: today MathAPI, whose 17
// functions are pure arithmetic. The others (GorillaFileSystem, TwitterAPI,
// MessageAPI, TicketAPI, TradingBot, TravelAPI, VehicleControlAPI) are
// stateful programs that argrl does not reimplement; Supported says which
// is which, so the importer can say why an entry is left out.
//
// A result is the JSON object the class's method returns: {"result": x}
// or {"error": "..."}.
package bfclsim

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// classes maps each simulated class to its functions.
var classes = map[string]map[string]mathFunc{"MathAPI": mathFuncs}

// DocFiles maps each BFCL multi-turn class to its function-document file
// under BFCL's data/multi_turn_func_doc.
var DocFiles = map[string]string{
	"GorillaFileSystem": "gorilla_file_system.json",
	"MathAPI":           "math_api.json",
	"MessageAPI":        "message_api.json",
	"TwitterAPI":        "posting_api.json",
	"TicketAPI":         "ticket_api.json",
	"TradingBot":        "trading_bot.json",
	"TravelAPI":         "travel_booking.json",
	"VehicleControlAPI": "vehicle_control.json",
}

// Supported reports whether class is simulated.
func Supported(class string) bool { _, ok := classes[class]; return ok }

// Classes lists the simulated classes, sorted.
func Classes() []string {
	out := make([]string, 0, len(classes))
	for c := range classes {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// World is one episode of some simulated classes.
type World struct {
	funcs   map[string]mathFunc
	classes []string
}

// New starts a world of the given classes (each must be Supported).
func New(involved []string) (*World, error) {
	w := &World{funcs: map[string]mathFunc{}}
	for _, c := range involved {
		fs, ok := classes[c]
		if !ok {
			return nil, fmt.Errorf("bfcl: class %s is not simulated (simulated: %s)", c, strings.Join(Classes(), ", "))
		}
		for n, f := range fs {
			w.funcs[n] = f
		}
		w.classes = append(w.classes, c)
	}
	return w, nil
}

// Has reports whether the world has the function name.
func (w *World) Has(name string) bool { _, ok := w.funcs[name]; return ok }

// Call runs one function and returns its result object as JSON.
func (w *World) Call(name string, args map[string]any) string {
	f, ok := w.funcs[name]
	if !ok {
		return encode(map[string]any{"error": fmt.Sprintf("unknown function %q", name)})
	}
	res, err := f(args)
	if err != nil {
		return encode(map[string]any{"error": err.Error()})
	}
	return encode(map[string]any{"result": res})
}

// State is the world's state: the classes' attributes. MathAPI has none,
// so each simulated class maps to an empty object.
func (w *World) State() json.RawMessage {
	st := map[string]any{}
	for _, c := range w.classes {
		st[c] = map[string]any{}
	}
	return json.RawMessage(encode(st))
}

func encode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return `{"error":"the result is not a finite number"}`
	}
	return string(b)
}
