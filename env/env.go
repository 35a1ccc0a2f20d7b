// Package env executes the calls of multi-turn rollouts: an environment
// takes the calls parsed from one assistant turn and answers with tool
// messages (role "tool", Name the function, Content its result: the
// schema's tool message, docs/contracts.md §1), and says whether the
// episode is over. Every rollout is its own episode, so the G samples of a
// prompt never see each other's state.
//
//	synth  the synthetic benchmark's 58 APIs, simulated (data/synth): a
//	       result is a pure function of the record's env seed, the API and
//	       its arguments; bookings and messages are the final state
//	bfcl   BFCL's multi-turn classes argrl simulates (MathAPI)
//	http   your own: each turn's calls are POSTed as JSON to a URL (http.go)
//
// Episode wraps a Session with the record's scripted user turns: a turn
// without calls ends the episode, unless the record (turns[i].user) has a
// user message left to ask next.
package env

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
)

// Env starts episodes.
type Env interface {
	Name() string
	// Open starts one rollout's episode of rec. episode names it uniquely
	// (for environments that keep the state elsewhere); rec must stay
	// unchanged until the session is closed.
	Open(ctx context.Context, rec *data.Record, episode string) (Session, error)
}

// Session is one episode's world.
type Session interface {
	// Exec runs one assistant turn's calls (at least one) and returns the
	// messages that answer them, one tool message per call in call order
	// (an http environment may add user messages after them), and whether
	// the episode is over. A call the world refuses is answered with an
	// error in its content, not with an error: the model reads it.
	Exec(ctx context.Context, calls []format.ParsedCall) ([]data.Message, bool, error)
	// State is the world's state as JSON (the final state once the episode
	// is over), or nil when the environment keeps none.
	State() json.RawMessage
	Close() error
}

// Config selects an environment (a recipe's rollout.env section).
type Config struct {
	Name string `yaml:"name"` // synth, bfcl or http
	// URL and TimeoutS configure http: the endpoint, and the longest a
	// request may take in seconds (0: 30).
	URL      string  `yaml:"url"`
	TimeoutS float64 `yaml:"timeout_s"`
}

// New builds the environment c names.
func New(c Config) (Env, error) {
	switch c.Name {
	case "synth":
		return Synth{}, nil
	case "bfcl":
		return BFCL{}, nil
	case "http":
		if c.TimeoutS < 0 {
			return nil, fmt.Errorf("env: http: timeout_s %v is negative", c.TimeoutS)
		}
		return NewHTTP(c.URL, time.Duration(c.TimeoutS*float64(time.Second)))
	}
	return nil, fmt.Errorf("env: unknown environment %q (valid: synth, bfcl, http)", c.Name)
}

// Step is the environment's answer to one assistant turn.
type Step struct {
	Messages []data.Message // what comes next in the conversation (nil when done)
	Done     bool
}

// Episode is one rollout's episode: a Session plus the record's scripted
// user turns.
type Episode struct {
	s     Session
	users []string // user messages of rec.Turns not asked yet
	done  bool
}

// Start opens an episode of rec on e.
func Start(ctx context.Context, e Env, rec *data.Record, episode string) (*Episode, error) {
	s, err := e.Open(ctx, rec, episode)
	if err != nil {
		return nil, fmt.Errorf("env %s: record %s: %w", e.Name(), rec.ID, err)
	}
	return &Episode{s: s, users: rec.UserTurns()}, nil
}

// Step gives the environment one assistant turn's calls. With calls, the
// session answers them; without, the record's next user turn is asked, or
// the episode ends when none is left.
func (ep *Episode) Step(ctx context.Context, calls []format.ParsedCall) (Step, error) {
	if ep.done {
		return Step{}, errors.New("env: Step after the episode ended")
	}
	if len(calls) == 0 {
		if len(ep.users) == 0 {
			ep.done = true
			return Step{Done: true}, nil
		}
		u := ep.users[0]
		ep.users = ep.users[1:]
		return Step{Messages: []data.Message{{Role: "user", Content: u}}}, nil
	}
	msgs, done, err := ep.s.Exec(ctx, calls)
	if err != nil {
		return Step{}, err
	}
	ep.done = done
	if done {
		msgs = nil
	}
	return Step{Messages: msgs, Done: done}, nil
}

// Done reports whether the episode is over.
func (ep *Episode) Done() bool { return ep.done }

// State is the session's state (see Session.State).
func (ep *Episode) State() json.RawMessage { return ep.s.State() }

// Close ends the session.
func (ep *Episode) Close() error { return ep.s.Close() }

// Calls turns gold calls into parsed calls (to replay a record's turns).
func Calls(calls []data.Call) []format.ParsedCall {
	out := make([]format.ParsedCall, len(calls))
	for i, c := range calls {
		out[i] = format.ParsedCall{Name: c.Name, Arguments: c.Arguments}
	}
	return out
}

// Replay runs rec's gold turns in a fresh episode and returns the final
// state: what a trajectory that follows the gold leaves behind.
func Replay(ctx context.Context, e Env, rec *data.Record) (json.RawMessage, error) {
	ep, err := Start(ctx, e, rec, "gold:"+rec.ID)
	if err != nil {
		return nil, err
	}
	defer ep.Close()
	for i, t := range rec.Turns {
		if len(t.Calls) == 0 {
			continue
		}
		_, done, err := ep.s.Exec(ctx, Calls(t.Calls))
		if err != nil {
			return nil, fmt.Errorf("env %s: record %s: gold turn %d: %w", e.Name(), rec.ID, i, err)
		}
		if done {
			break
		}
	}
	return ep.State(), nil
}

// offered indexes the record's tools by name.
func offered(rec *data.Record) map[string]bool {
	m := make(map[string]bool, len(rec.Tools))
	for _, t := range rec.Tools {
		m[t.Name] = true
	}
	return m
}

// errorContent is the content of a tool message that reports an error.
func errorContent(msg string) string {
	b, _ := json.Marshal(map[string]string{"error": msg})
	return string(b)
}
