package env

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/data/synth"
)

// Synth simulates the synthetic benchmark's APIs (data/synth): every
// result is a pure function of the record's env seed and language, the API
// and its arguments. Only the record's tools may be called; the episode
// ends when the model answers without calls. The state is the list of
// world-changing calls that succeeded, in a canonical order.
type Synth struct{}

// Name returns "synth".
func (Synth) Name() string { return "synth" }

// Open starts an episode of the world rec.env.seed (seed 0 when the record
// has no env).
func (Synth) Open(_ context.Context, rec *data.Record, _ string) (Session, error) {
	var seed uint64
	if rec.Env != nil {
		if rec.Env.Name != "synth" {
			return nil, fmt.Errorf("the record's environment is %q, not synth", rec.Env.Name)
		}
		seed = rec.Env.Seed
	}
	sim, err := synth.NewSim(seed, rec.Lang)
	if err != nil {
		return nil, err
	}
	return &toolSession{call: sim.Call, state: func() json.RawMessage { return synthState(sim) }, tools: offered(rec)}, nil
}

// synthState encodes the simulated world's effects.
func synthState(sim *synth.Sim) json.RawMessage {
	st := sim.State()
	if st == nil {
		st = []data.Call{}
	}
	b, err := json.Marshal(st)
	if err != nil { // arguments come from JSON or the parsers: always encodable
		return nil
	}
	return b
}

// toolSession answers each offered call with call's result; the
// environment never ends the episode itself.
type toolSession struct {
	call  func(name string, args map[string]any) string
	state func() json.RawMessage
	tools map[string]bool
}

func (s *toolSession) Exec(_ context.Context, calls []format.ParsedCall) ([]data.Message, bool, error) {
	out := make([]data.Message, len(calls))
	for i, c := range calls {
		content := errorContent(fmt.Sprintf("function %q is not among the tools offered", c.Name))
		if s.tools[c.Name] {
			content = s.call(c.Name, c.Arguments)
		}
		out[i] = data.Message{Role: "tool", Name: c.Name, Content: content}
	}
	return out, false, nil
}

func (s *toolSession) State() json.RawMessage { return s.state() }

func (s *toolSession) Close() error { return nil }
