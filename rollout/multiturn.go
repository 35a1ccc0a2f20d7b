package rollout

// Multi-turn rollouts (Engine.Episodes): after each assistant turn the
// environment (package env) answers the turn's calls, the answer goes back
// into the conversation, and generation continues in the same KV-cache
// slot until the episode is done or MaxTurns turns were taken.
//
// Token in, token out. The ids the model sampled are kept exactly as
// sampled: they are never decoded and encoded again. After a turn only the
// new part is tokenized: the chat template's text between the end of the
// assistant turn and the start of the next one (the end-of-turn marker,
// the environment's messages, the next assistant header), found by
// rendering the conversation with a marker in place of the turn's content.
// When the turn ended with a stop token that is the template's end-of-turn
// marker, that sampled token stands for it; otherwise (a stop string, the
// length cap, another stop id) the template's marker is added. So the
// trajectory's ids are what the model saw and what the trainer trains on,
// and, turn by turn, the template's rendering of the same conversation,
// with two differences that re-rendering would introduce and keeping the
// ids avoids: Qwen3 writes its empty think block only after the header of
// the turn to generate (the trajectory keeps it in every turn, as the
// model saw it), and Llama-3 trims an assistant turn's surrounding blanks
// (the trajectory keeps them, as sampled).
//
// The cache. A turn ends with its last sampled token not yet in the cache
// (it would be fed by the next decode step): that token and the new ids
// become the sample's pending tokens, which the scheduler's next steps
// feed in chunks beside the other sequences' decode rows, and the next
// turn's first token is drawn from the logits of the last of them. The
// sample keeps its cache pages across turns. The G samples of a prompt
// share its one prefill, then each continues on its own pages: groups
// stay per prompt, episodes are per sample.
//
// Limits. Each turn takes at most MaxNewTokens; an environment step may
// append at most Conversation.MaxEnvTokens ids; a sequence holds at most
// min(MaxLen, prompt + MaxTurns·MaxNewTokens + (MaxTurns−1)·MaxEnvTokens)
// ids (a function of the prompt, so a sample never depends on the others
// of the call). An episode that cannot go on within them ends with
// FinishContext.
//
// Determinism. Draw k of a sample (k counting its sampled tokens over all
// turns) uses Uniform(seed, id, sample, k); the environment's answers are
// deterministic; so an episode is reproducible like a single-turn sample,
// alone or among others.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/env"
	"github.com/argrl/argrl/model/chat"
)

// Conversation is what a multi-turn rollout needs besides the model.
type Conversation struct {
	Env      env.Env
	Template chat.Template
	Format   format.Format // parses each turn into the calls the environment runs
	// MaxEnvTokens caps the ids one environment step appends (the
	// template's glue and the answer); 0 means 512.
	MaxEnvTokens int
}

// Turn is one assistant turn of a multi-turn sample.
type Turn struct {
	Start, End int // the turn's sampled ids: Sample.IDs[Start:End]
	// Text is the turn's ids decoded, special tokens skipped; it starts at
	// byte TextStart of Sample.Text.
	Text      string
	TextStart int
	Parsed    format.Parsed // Text in the conversation's format; spans are relative to Text
	Finish    Finish        // why the turn's sampling stopped: stop, length or context
	// Env is the environment's answer to the turn (nil when it ended the
	// episode); EnvEnd ends the ids appended for it, Sample.IDs[End:EnvEnd]
	// (EnvEnd = End after the last turn: nothing appended).
	Env    []data.Message
	EnvEnd int
}

// ArgSpans returns the byte spans, in Sample.Text, of the argument values
// of every call of every turn, in order: where β token weighting applies.
func (s *Sample) ArgSpans() [][2]int {
	var out [][2]int
	for _, t := range s.Turns {
		for _, c := range t.Parsed.Calls {
			for _, sp := range c.ArgSpans {
				out = append(out, [2]int{t.TextStart + sp.Start, t.TextStart + sp.End})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// Episodes rolls out p.G multi-turn episodes of each record and returns
// the groups in record order: the records' prompts are RecordPrompts',
// each sample is one episode of c.Env (see Sample and Turn). p.MaxTurns
// caps the turns (0 means 1); the engine needs a tokenizer.
func (e *Engine) Episodes(ctx context.Context, recs []data.Record, p Params, c Conversation) ([]*Group, error) {
	if e.tok == nil || c.Env == nil || c.Template == nil || c.Format == nil {
		return nil, errors.New("rollout: Episodes needs a tokenizer (Options.Tokenizer), an environment, a template and a format")
	}
	if c.MaxEnvTokens < 0 {
		return nil, fmt.Errorf("rollout: MaxEnvTokens %d is negative", c.MaxEnvTokens)
	}
	if c.MaxEnvTokens == 0 {
		c.MaxEnvTokens = 512
	}
	p.MaxTurns = max(p.MaxTurns, 1)
	prompts, err := RecordPrompts(recs, c.Template, c.Format, e.tok)
	if err != nil {
		return nil, err
	}
	mt := &multiTurn{c: c, recs: recs}
	out := make([]*Group, 0, len(recs))
	err = e.runWith(ctx, prompts, p, mt, func(g *Group) bool { out = append(out, g); return true })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// multiTurn is one Episodes call's configuration.
type multiTurn struct {
	c    Conversation
	recs []data.Record
}

// budget is the most response ids a sequence may hold (single-turn:
// MaxNewTokens).
func (mt *multiTurn) budget(p *Params) int {
	if mt == nil {
		return p.MaxNewTokens
	}
	return p.MaxTurns*p.MaxNewTokens + (p.MaxTurns-1)*mt.c.MaxEnvTokens
}

// episode is one sample's multi-turn state.
type episode struct {
	rec       *data.Record
	env       *env.Episode
	conv      []data.Message // the conversation so far
	drawn     int            // tokens sampled in the finished turns
	turnStart int            // index in IDs of the current turn's first id
	limit     int            // most prompt + response ids
	closed    bool
}

// turnEnd is a sample whose turn ended, and why.
type turnEnd struct {
	sq *seqState
	f  Finish
}

func (ep *episode) drawIndex(sq *seqState) int { return ep.drawn + len(sq.s.IDs) - ep.turnStart }

// ended returns why the sample's current turn ends at its newest token.
func (ep *episode) ended(r *runState, sq *seqState) Finish {
	turn := sq.s.IDs[ep.turnStart:]
	switch {
	case r.e.stopped(turn, r.p):
		return FinishStop
	case len(turn) >= r.p.MaxNewTokens:
		return FinishLength
	case len(sq.g.PromptIDs)+len(sq.s.IDs) >= ep.limit:
		return FinishContext
	}
	return ""
}

// startEpisodes opens one episode per sample of prompt i (multi-turn), or
// returns G nils.
func (r *runState) startEpisodes(i int, g *groupState) ([]*episode, error) {
	eps := make([]*episode, len(g.Samples))
	if r.mt == nil {
		return eps, nil
	}
	rec := &r.mt.recs[i]
	limit := min(r.e.o.MaxLen, len(g.PromptIDs)+r.mt.budget(r.p))
	for s := range eps {
		name := fmt.Sprintf("%s/%d/%d", g.ID, r.p.Seed, s)
		ee, err := env.Start(r.ctx, r.mt.c.Env, rec, name)
		if err != nil {
			return nil, err
		}
		eps[s] = &episode{rec: rec, env: ee, conv: slices.Clone(rec.Messages), limit: limit}
		r.open = append(r.open, eps[s])
	}
	return eps, nil
}

// closeEpisodes closes the episodes a failed call left open.
func (r *runState) closeEpisodes() {
	for _, ep := range r.open {
		if !ep.closed {
			ep.closed = true
			ep.env.Close()
		}
	}
}

// endTurns runs the environment for every pending turn end: the sample
// either finishes or starts its next turn (which may end at once).
func (r *runState) endTurns() error {
	for len(r.pending) > 0 {
		te := r.pending[0]
		r.pending = r.pending[1:]
		more, err := r.endTurn(te.sq, te.f)
		if err != nil {
			return fmt.Errorf("prompt %d (id %q) sample %d, turn %d: %w", te.sq.g.Index, te.sq.g.ID, te.sq.s.Index, len(te.sq.s.Turns), err)
		}
		if more {
			r.active = append(r.active, te.sq)
		}
	}
	r.pending = r.pending[:0]
	return nil
}

// endTurn closes the sample's current turn, which ended with f, and says
// whether its episode goes on (then its next turn's first token is drawn).
func (r *runState) endTurn(sq *seqState, f Finish) (bool, error) {
	e, ep, s, p := r.e, sq.ep, sq.s, r.p
	t := Turn{Start: ep.turnStart, End: len(s.IDs), Finish: f}
	t.Text = e.tok.Decode(s.IDs[t.Start:t.End], true)
	t.Parsed = r.mt.c.Format.Parse(t.Text)
	t.EnvEnd = t.End
	ep.drawn += t.End - t.Start
	var calls []format.ParsedCall
	if t.Parsed.Valid {
		calls = t.Parsed.Calls
	}
	st, err := ep.env.Step(r.ctx, calls)
	if err != nil {
		return false, err
	}
	t.Env = st.Messages
	end := func(f Finish) (bool, error) {
		s.Turns = append(s.Turns, t)
		r.finish(sq, f)
		return false, nil
	}
	switch {
	case st.Done:
		return end(FinishDone)
	case len(s.Turns)+1 >= p.MaxTurns:
		return end(FinishTurns)
	case f == FinishContext:
		return end(FinishContext)
	}
	t0 := time.Now()
	glue, err := r.glue(sq, st.Messages)
	if err != nil {
		return false, err
	}
	if len(glue) > r.mt.c.MaxEnvTokens || len(sq.g.PromptIDs)+len(s.IDs)+len(glue) >= ep.limit {
		return end(FinishContext)
	}
	s.IDs = append(s.IDs, glue...)
	s.LogProbs = append(s.LogProbs, make([]float32, len(glue))...)
	t.EnvEnd = len(s.IDs)
	s.Turns = append(s.Turns, t)
	ep.conv = append(append(ep.conv, data.Message{Role: "assistant", Content: t.Text}), st.Messages...)
	ep.turnStart = len(s.IDs)
	e.stats.PromptTokens += len(glue)
	e.stats.Prefill += time.Since(t0)
	// The turn's last token and the glue are now pending: the next steps
	// feed them (chunked like a prompt) and draw the next turn's first
	// token with the sample's stream at ep.drawn.
	return true, nil
}

// turnMark stands for the assistant turn's content when the conversation
// is rendered to find the template's text after it.
const turnMark = "<<argrl:assistant-turn>>"

// glue tokenizes what the template writes between the end of the sample's
// current assistant turn and the next assistant turn's content, given the
// environment's answer msgs (see the file comment).
func (r *runState) glue(sq *seqState, msgs []data.Message) ([]int32, error) {
	ep := sq.ep
	rec := *ep.rec
	rec.Messages = append(append(slices.Clone(ep.conv), data.Message{Role: "assistant", Content: turnMark}), msgs...)
	rendered, err := r.mt.c.Template.Render(rec, r.mt.c.Format, false)
	if err != nil {
		return nil, fmt.Errorf("render the environment's answer: %w", err)
	}
	i := strings.LastIndex(rendered.Prompt, turnMark)
	if i < 0 {
		return nil, fmt.Errorf("template %s dropped the assistant turn", r.mt.c.Template.Name())
	}
	after := rendered.Prompt[i+len(turnMark):]
	last := sq.s.IDs[len(sq.s.IDs)-1]
	if slices.Contains(r.p.StopIDs, last) {
		if eot := r.e.tok.Decode([]int32{last}, false); eot != "" && strings.HasPrefix(after, eot) {
			after = after[len(eot):] // the sampled stop token is the end-of-turn marker
		}
	}
	if after == "" {
		return nil, fmt.Errorf("template %s writes nothing after an assistant turn", r.mt.c.Template.Name())
	}
	ids, _ := r.e.tok.Encode(after, false)
	return ids, nil
}

// finishEpisode fills a finished multi-turn sample's text, offsets, mask
// and state, and closes its episode.
func (r *runState) finishEpisode(sq *seqState) {
	s, ep := sq.s, sq.ep
	var b strings.Builder
	offs := make([][2]int, 0, len(s.IDs))
	segment := func(ids []int32) int {
		start := b.Len()
		text, o := r.e.tok.DecodeOffsets(ids, true)
		b.WriteString(text)
		for _, x := range o {
			offs = append(offs, [2]int{x[0] + start, x[1] + start})
		}
		return start
	}
	s.Mask = make([]bool, len(s.IDs))
	for i := range s.Turns {
		t := &s.Turns[i]
		t.TextStart = segment(s.IDs[t.Start:t.End])
		segment(s.IDs[t.End:t.EnvEnd])
		for k := t.Start; k < t.End; k++ {
			s.Mask[k] = true
		}
	}
	s.Text, s.Offsets = b.String(), offs
	s.State = ep.env.State()
	if !ep.closed {
		ep.closed = true
		ep.env.Close() // an http server that misses the close notice only keeps the episode longer
	}
}
