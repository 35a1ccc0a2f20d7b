package reward

// Trajectory rewards score a whole multi-turn episode (docs/contracts.md
// §1 turns, §4):
//
//	R = turn_weight · (1/N)·Σ_i r_i  +  state_weight · S
//
//   - r_i is the per-turn reward (any registered reward: rm3, decomposed,
//     binary, ...) of assistant turn i against gold turn i, computed by the
//     one scorer on the record restricted to that turn (its gold calls;
//     accept and smv for turn 0 only; the user messages asked so far). N is
//     the larger of the gold and the trajectory's turn counts: a gold turn
//     the episode never reached is scored as an empty response, and a turn
//     past the gold's last is scored against a turn without calls.
//   - S ∈ [0, 1] compares the episode's final state with the state the gold
//     turns leave (replayed in a fresh episode of the environment, once
//     per record): two lists are matched one-to-one (greedily, values
//     normalized as §3 does) and score matched / max(len); any other
//     values score 1 when equal, else 0. Without a state on either side
//     the term is left out.
//
// A record without turns has one gold turn: its calls.

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/env"
	"github.com/argrl/argrl/reward/internal/norm"
)

// Trajectory is one episode as the trajectory reward reads it.
type Trajectory struct {
	Turns []string // each assistant turn's text, in order
	// Starts, optional, gives each turn's byte offset in the text the
	// result's spans should refer to (rollout.Turn.TextStart, into
	// rollout.Sample.Text); nil means 0 for every turn.
	Starts []int
	State  json.RawMessage // the environment's final state (nil: none)
}

// TrajectoryConfig weighs the two terms.
type TrajectoryConfig struct {
	TurnWeight  float64 `yaml:"turn_weight"`  // weight of the mean per-turn reward [1]
	StateWeight float64 `yaml:"state_weight"` // weight of the final-state match [1]
}

// DefaultTrajectoryConfig returns the defaults: both weights 1.
func DefaultTrajectoryConfig() TrajectoryConfig {
	return TrajectoryConfig{TurnWeight: 1, StateWeight: 1}
}

// TrajectoryResult is a trajectory's reward and its breakdown.
type TrajectoryResult struct {
	Reward float64 `json:"reward"`
	// Turns holds the per-turn results, N of them (see the file comment).
	Turns    []*Result `json:"turns"`
	TurnMean float64   `json:"turn_mean"`
	// State is S; HasState says whether it entered the reward.
	State    float64 `json:"state"`
	HasState bool    `json:"has_state"`
	// Spans are the argument-value spans of every turn the trajectory has,
	// shifted by Starts (β token weighting).
	Spans [][2]int           `json:"spans,omitempty"`
	Parts map[string]float64 `json:"parts"`
}

// TrajectoryReward scores trajectories with a per-turn reward and an
// environment (for the gold state; nil leaves the state term out).
type TrajectoryReward struct {
	turn Reward
	env  env.Env
	c    TrajectoryConfig
	mu   sync.Mutex
	gold map[string]json.RawMessage // gold final state by record id
}

// NewTrajectory builds the trajectory reward over turn.
func NewTrajectory(turn Reward, e env.Env, c TrajectoryConfig) (*TrajectoryReward, error) {
	if turn == nil {
		return nil, fmt.Errorf("reward: trajectory: no per-turn reward")
	}
	if c.TurnWeight < 0 || c.StateWeight < 0 || c.TurnWeight+c.StateWeight == 0 {
		return nil, fmt.Errorf("reward: trajectory: weights %v and %v: want non-negative, not both 0", c.TurnWeight, c.StateWeight)
	}
	return &TrajectoryReward{turn: turn, env: e, c: c, gold: map[string]json.RawMessage{}}, nil
}

// Name is "trajectory:" and the per-turn reward's name.
func (t *TrajectoryReward) Name() string { return "trajectory:" + t.turn.Name() }

// goldTurns returns rec's gold turns (a record without turns has one).
func goldTurns(rec *data.Record) []data.Turn {
	if len(rec.Turns) > 0 {
		return rec.Turns
	}
	return []data.Turn{{Calls: rec.Calls}}
}

// TurnRecord is rec restricted to gold turn i: the record the per-turn
// reward scores turn i against. Past the last gold turn it wants no call.
func TurnRecord(rec *data.Record, i int) data.Record {
	gold := goldTurns(rec)
	r := *rec
	r.Turns, r.Calls = nil, []data.Call{}
	r.Messages = append([]data.Message(nil), rec.Messages...)
	for j := 1; j <= i && j < len(gold); j++ {
		if gold[j].User != "" {
			r.Messages = append(r.Messages, data.Message{Role: "user", Content: gold[j].User})
		}
	}
	if i < len(gold) {
		r.Calls = gold[i].Calls
	}
	if i > 0 {
		r.Accept, r.SMV = nil, nil
	}
	return r
}

// Score scores one trajectory of rec.
func (t *TrajectoryReward) Score(ctx context.Context, rec *data.Record, tr Trajectory) (*TrajectoryResult, error) {
	if tr.Starts != nil && len(tr.Starts) != len(tr.Turns) {
		return nil, fmt.Errorf("reward: trajectory of %s: %d turn starts for %d turns", rec.ID, len(tr.Starts), len(tr.Turns))
	}
	gold := goldTurns(rec)
	n := max(len(gold), len(tr.Turns))
	res := &TrajectoryResult{Parts: map[string]float64{}}
	sum, exact := 0.0, 0
	for i := range n {
		text := ""
		if i < len(tr.Turns) {
			text = tr.Turns[i]
		}
		tr2 := TurnRecord(rec, i)
		r, err := t.turn.Score(ctx, &tr2, text)
		if err != nil {
			return nil, fmt.Errorf("reward: trajectory of %s, turn %d: %w", rec.ID, i, err)
		}
		res.Turns = append(res.Turns, r)
		sum += r.Reward
		if r.Metrics.FCM {
			exact++
		}
		if i < len(tr.Turns) {
			off := 0
			if tr.Starts != nil {
				off = tr.Starts[i]
			}
			for _, sp := range r.Spans {
				res.Spans = append(res.Spans, [2]int{sp[0] + off, sp[1] + off})
			}
		}
	}
	res.TurnMean = sum / float64(n)
	res.Reward = t.c.TurnWeight * res.TurnMean
	if t.env != nil && tr.State != nil {
		g, err := t.goldState(ctx, rec)
		if err != nil {
			return nil, err
		}
		if g != nil {
			s, err := StateScore(g, tr.State)
			if err != nil {
				return nil, fmt.Errorf("reward: trajectory of %s: %w", rec.ID, err)
			}
			res.State, res.HasState = s, true
			res.Reward += t.c.StateWeight * s
		}
	}
	res.Parts["turn_mean"], res.Parts["state"] = res.TurnMean, res.State
	res.Parts["turns"], res.Parts["gold_turns"] = float64(len(tr.Turns)), float64(len(gold))
	res.Parts["exact_turns"] = float64(exact)
	return res, nil
}

// goldState replays rec's gold turns once and caches the final state.
func (t *TrajectoryReward) goldState(ctx context.Context, rec *data.Record) (json.RawMessage, error) {
	t.mu.Lock()
	g, ok := t.gold[rec.ID]
	t.mu.Unlock()
	if ok {
		return g, nil
	}
	g, err := env.Replay(ctx, t.env, rec)
	if err != nil {
		return nil, fmt.Errorf("reward: gold state: %w", err)
	}
	t.mu.Lock()
	t.gold[rec.ID] = g
	t.mu.Unlock()
	return g, nil
}

// StateScore compares a final state with the gold one (see the file
// comment): in [0, 1].
func StateScore(gold, got json.RawMessage) (float64, error) {
	var g, p any
	if err := json.Unmarshal(gold, &g); err != nil {
		return 0, fmt.Errorf("gold state: %w", err)
	}
	if err := json.Unmarshal(got, &p); err != nil {
		return 0, fmt.Errorf("state: %w", err)
	}
	gl, ok1 := g.([]any)
	pl, ok2 := p.([]any)
	if !ok1 || !ok2 {
		if norm.Equal(g, p) {
			return 1, nil
		}
		return 0, nil
	}
	if len(gl) == 0 && len(pl) == 0 {
		return 1, nil
	}
	used := make([]bool, len(pl))
	matched := 0
	for _, x := range gl {
		for j, y := range pl {
			if !used[j] && norm.Equal(x, y) {
				used[j] = true
				matched++
				break
			}
		}
	}
	return float64(matched) / float64(max(len(gl), len(pl))), nil
}
