package serve

// The two generation endpoints and their responses, whole or as
// server-sent events sent while the engine draws the tokens (stream.go).

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/argrl/argrl/rollout"
)

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type tokenLogprob struct {
	Token       string         `json:"token"`
	Logprob     float32        `json:"logprob"`
	Bytes       []int          `json:"bytes"`
	TopLogprobs []tokenLogprob `json:"top_logprobs,omitempty"`
}

type chatLogprobs struct {
	Content []tokenLogprob `json:"content"`
}

type chatChoiceMsg struct {
	Role      string     `json:"role,omitempty"`
	Content   *string    `json:"content"`
	ToolCalls []toolCall `json:"tool_calls,omitempty"`
}

type chatChoice struct {
	Index        int           `json:"index"`
	Message      chatChoiceMsg `json:"message"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
	TokenIDs     []int32       `json:"token_ids,omitempty"` // extension
}

// answer is one sample as served: its text (stop string cut), ids,
// log-probs and finish reason.
type answer struct {
	text   string
	offs   [][2]int
	smp    *rollout.Sample
	top    [][]topEntry
	finish string
}

func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// answers flattens the groups: prompt i, sample j is choice i·n + j.
func answers(res jobResult, stops []string) []answer {
	var out []answer
	for gi, g := range res.groups {
		for si := range g.Samples {
			smp := &g.Samples[si]
			a := answer{text: smp.Text, offs: smp.Offsets, smp: smp, finish: "stop"}
			if smp.Finish == rollout.FinishLength || smp.Finish == rollout.FinishContext {
				a.finish = "length"
			}
			if smp.Finish == rollout.FinishStop {
				cut := len(a.text)
				for _, st := range stops {
					if i := strings.Index(a.text, st); i >= 0 {
						cut = min(cut, i)
					}
				}
				a.text = a.text[:cut]
			}
			if res.top != nil {
				a.top = res.top[gi][si]
			}
			out = append(out, a)
		}
	}
	return out
}

func (s *Server) tokenLogprobs(a *answer) []tokenLogprob {
	out := make([]tokenLogprob, len(a.smp.IDs))
	for t, id := range a.smp.IDs {
		out[t] = s.tokenEntry(id, a.smp.LogProbs[t])
		if a.top != nil {
			out[t].TopLogprobs = []tokenLogprob{}
			for _, e := range a.top[t] {
				out[t].TopLogprobs = append(out[t].TopLogprobs, s.tokenEntry(e.ID, e.LogProb))
			}
		}
	}
	return out
}

func (s *Server) tokenEntry(id int32, lp float32) tokenLogprob {
	txt := s.tok.Decode([]int32{id}, false)
	b := make([]int, len(txt))
	for i := range len(txt) {
		b[i] = int(txt[i])
	}
	return tokenLogprob{Token: txt, Logprob: lp, Bytes: b}
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) *apiError {
	body, err := readBody(r, s.o.MaxBody)
	if err != nil {
		return err
	}
	req, tc, tools, err := decodeChat(body)
	if err != nil {
		return err
	}
	adapter, err := s.adapterOf(req.Model)
	if err != nil {
		return err
	}
	msgs, err := req.messages()
	if err != nil {
		return err
	}
	ids, prefix, err := s.chatPrompt(msgs, tools, tc)
	if err != nil {
		return err
	}
	topLP := 0
	if req.Logprobs && req.TopLogprobs != nil {
		topLP = *req.TopLogprobs
	}
	ctx := r.Context()
	j, err := s.prepare(ctx, &req.sampling, adapter, []rollout.Prompt{{IDs: ids}}, topLP, req.Stream)
	if err != nil {
		return err
	}
	id, created := newID("chatcmpl-"), time.Now().Unix()
	head := map[string]any{"id": id, "created": created, "model": req.Model, "system_fingerprint": "argrl"}
	if req.ReturnTokenIDs {
		head["prompt_token_ids"] = ids
	}
	if req.Stream {
		return s.streamChat(w, req, j, head, prefix, tc, len(tools) > 0)
	}
	res := s.sched.do(j)
	if err := s.finish(ctx, res); err != nil {
		return err
	}
	stops, _ := req.stops()
	ans := answers(res, stops)
	choices := make([]chatChoice, len(ans))
	u := usage{PromptTokens: len(ids)}
	for i := range ans {
		a := &ans[i]
		u.CompletionTokens += len(a.smp.IDs)
		content, calls := s.assistantMessage(prefix+a.text, tc, callIDs(id, i))
		c := chatChoice{Index: i, Message: chatChoiceMsg{Role: "assistant", Content: content, ToolCalls: calls}, FinishReason: a.finish}
		if len(calls) > 0 && a.finish == "stop" {
			c.FinishReason = "tool_calls"
		}
		if req.Logprobs {
			c.Logprobs = &chatLogprobs{Content: s.tokenLogprobs(a)}
		}
		if req.ReturnTokenIDs {
			c.TokenIDs = nonNil(a.smp.IDs)
		}
		choices[i] = c
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	head["object"], head["choices"], head["usage"] = "chat.completion", choices, u
	writeJSON(w, head)
	return nil
}

// callIDs is the prefix of the ids of choice i's calls.
func callIDs(id string, i int) string { return fmt.Sprintf("call_%s_%d", id[9:17], i) }

// streamChat sends a chat answer as server-sent events while it is
// generated (stream.go). The headers go out with the first token, so a
// request the engine refuses before any still gets its error status.
func (s *Server) streamChat(w http.ResponseWriter, req *chatRequest, j *job, head map[string]any, prefix string, tc *toolChoice, tools bool) *apiError {
	ctx := j.ctx
	resc := make(chan jobResult, 1)
	go func() { resc <- s.sched.do(j) }()
	head["object"] = "chat.completion.chunk"
	stops, _ := req.stops()
	id := head["id"].(string)
	n := j.params.G
	parse := s.format.Name() == "tool_call" && tc.Mode != "none"
	cs := make([]*chatStream, n)
	for i := range cs {
		cs[i] = &chatStream{textStream: textStream{s: s, stops: stops, prefix: prefix}, parse: parse, hold: !parse && tools && tc.Mode != "none"}
	}
	lpNow := req.Logprobs && j.topLP == 0 // top_logprobs are recomputed at the end: all log-probs come then
	pend := make([][]tokenLogprob, n)
	var ev *events
	send := func(i int, delta map[string]any, finish any, extra map[string]any) {
		ch := map[string]any{"index": i, "delta": delta, "logprobs": nil, "finish_reason": finish}
		if len(pend[i]) > 0 {
			ch["logprobs"] = chatLogprobs{Content: pend[i]}
			pend[i] = nil
		}
		for k, v := range extra {
			ch[k] = v
		}
		ev.send(head, []any{ch}, nil)
	}
	start := func() {
		if ev == nil {
			ev = newEvents(w)
			for i := range cs {
				send(i, map[string]any{"role": "assistant", "content": ""}, nil, nil)
			}
		}
	}
	callDelta := func(i, k int, callID, name, args string) {
		tcall := toolCall{Index: &k, Function: functionCall{Name: name, Arguments: args}}
		if callID != "" {
			tcall.ID, tcall.Type = callID, "function"
		}
		send(i, map[string]any{"tool_calls": []toolCall{tcall}}, nil, nil)
	}
	emit := func(i int, ds []delta) {
		for _, d := range ds {
			switch {
			case d.content != nil:
				send(i, map[string]any{"content": *d.content}, nil, nil)
			case d.head:
				callDelta(i, d.call, fmt.Sprintf("%s_%d", callIDs(id, i), d.call), d.name, "")
			default:
				callDelta(i, d.call, "", "", d.args)
			}
		}
	}
	feed := func(toks []streamToken) {
		start()
		touched := make([]bool, n)
		for _, tk := range toks {
			c := cs[tk.sample]
			c.ids = append(c.ids, tk.id)
			if lpNow {
				pend[tk.sample] = append(pend[tk.sample], s.tokenEntry(tk.id, tk.logProb))
			}
			touched[tk.sample] = true
		}
		for i, c := range cs {
			if touched[i] {
				emit(i, c.advance(c.avail()))
			}
		}
	}
	for {
		select {
		case <-j.stream.wake:
			if toks := j.stream.take(); len(toks) > 0 {
				feed(toks)
			}
			continue
		case res := <-resc:
			if err := s.finish(ctx, res); err != nil {
				if ev == nil {
					return err
				}
				ev.sendError(err)
				return nil
			}
			if toks := j.stream.take(); len(toks) > 0 {
				feed(toks)
			}
			start()
			ans := answers(res, stops)
			u := usage{PromptTokens: len(res.groups[0].PromptIDs)}
			for i := range ans {
				a, c := &ans[i], cs[i]
				u.CompletionTokens += len(a.smp.IDs)
				full := prefix + a.text
				emit(i, c.advance(full))
				content, calls := s.assistantMessage(full, tc, callIDs(id, i))
				switch {
				case len(calls) > 0 && c.hold:
					if content != nil {
						send(i, map[string]any{"content": *content}, nil, nil)
					}
					for k, call := range calls {
						callDelta(i, k, call.ID, call.Function.Name, "")
						callDelta(i, k, "", "", call.Function.Arguments)
					}
				case len(calls) > 0:
					for k, call := range calls {
						if k < len(c.calls) {
							if rest, ok := strings.CutPrefix(call.Function.Arguments, c.calls[k].args.String()); ok && rest != "" {
								callDelta(i, k, "", "", rest)
							}
							continue
						}
						callDelta(i, k, call.ID, call.Function.Name, "")
						callDelta(i, k, "", "", call.Function.Arguments)
					}
				case c.content < len(full): // no calls: the rest is text
					rest := full[c.content:]
					send(i, map[string]any{"content": rest}, nil, nil)
				}
				finish := a.finish
				if len(calls) > 0 && a.finish == "stop" {
					finish = "tool_calls"
				}
				if req.Logprobs && !lpNow {
					pend[i] = s.tokenLogprobs(a)
				}
				var extra map[string]any
				if req.ReturnTokenIDs {
					extra = map[string]any{"token_ids": nonNil(a.smp.IDs)}
				}
				send(i, map[string]any{}, finish, extra)
			}
			u.TotalTokens = u.PromptTokens + u.CompletionTokens
			if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
				ev.send(head, []any{}, &u)
			}
			ev.done()
			return nil
		}
	}
}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

// events writes server-sent events.
type events struct {
	w http.ResponseWriter
	f http.Flusher
}

func newEvents(w http.ResponseWriter) *events {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &events{w: w, f: f}
}

func (e *events) send(head map[string]any, choices []any, u *usage) {
	m := make(map[string]any, len(head)+2)
	for k, v := range head {
		m[k] = v
	}
	m["choices"] = choices
	if u != nil {
		m["usage"] = u
	}
	b, err := json.Marshal(m)
	if err != nil {
		b = []byte(`{"error":{"message":"encoding the event failed","type":"server_error"}}`)
	}
	fmt.Fprintf(e.w, "data: %s\n\n", b)
	if e.f != nil {
		e.f.Flush()
	}
}

// sendError ends a stream that fails after it started with an error event.
func (e *events) sendError(a *apiError) {
	b, err := json.Marshal(map[string]*apiError{"error": a})
	if err != nil {
		b = []byte(`{"error":{"message":"the request failed","type":"server_error"}}`)
	}
	fmt.Fprintf(e.w, "data: %s\n\n", b)
	e.done()
}

func (e *events) done() {
	fmt.Fprint(e.w, "data: [DONE]\n\n")
	if e.f != nil {
		e.f.Flush()
	}
}

type completionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float32            `json:"token_logprobs"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

type completionChoice struct {
	Index        int                 `json:"index"`
	Text         string              `json:"text"`
	Logprobs     *completionLogprobs `json:"logprobs"`
	FinishReason string              `json:"finish_reason"`
	TokenIDs     []int32             `json:"token_ids,omitempty"`        // extension
	PromptIDs    []int32             `json:"prompt_token_ids,omitempty"` // extension
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) *apiError {
	body, err := readBody(r, s.o.MaxBody)
	if err != nil {
		return err
	}
	var req completionRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	if err := req.check(req.MaxTokens); err != nil {
		return err
	}
	if req.Echo {
		return badRequest("echo", "unsupported_value", "key \"echo\": true is not served")
	}
	if lp := req.Logprobs; lp != nil && (*lp < 0 || *lp > 5) {
		return badRequest("logprobs", "invalid_value", "key \"logprobs\": %d; want 0..5", *lp)
	}
	adapter, err := s.adapterOf(req.Model)
	if err != nil {
		return err
	}
	texts, idss, err := req.prompts()
	if err != nil {
		return err
	}
	for _, t := range texts {
		ids, _ := s.tok.Encode(t, true)
		if len(ids) == 0 {
			return badRequest("prompt", "invalid_value", "key \"prompt\": an empty prompt (a prompt needs at least one token)")
		}
		idss = append(idss, ids)
	}
	prompts := make([]rollout.Prompt, len(idss))
	for i, ids := range idss {
		prompts[i] = rollout.Prompt{IDs: ids}
	}
	topLP := 0
	if req.Logprobs != nil {
		topLP = *req.Logprobs
	}
	ctx := r.Context()
	j, err := s.prepare(ctx, &req.sampling, adapter, prompts, topLP, req.Stream)
	if err != nil {
		return err
	}
	head := map[string]any{"id": newID("cmpl-"), "created": time.Now().Unix(), "model": req.Model, "system_fingerprint": "argrl"}
	var ev *events
	var sent []int
	var ts []*textStream
	resc := make(chan jobResult, 1)
	stops, _ := req.stops()
	if req.Stream {
		head["object"] = "text_completion"
		n := j.params.G
		ts, sent = make([]*textStream, len(prompts)*n), make([]int, len(prompts)*n)
		for i := range ts {
			ts[i] = &textStream{s: s, stops: stops}
		}
		go func() { resc <- s.sched.do(j) }()
	wait:
		for {
			select {
			case <-j.stream.wake:
			case res := <-resc:
				resc <- res
				break wait
			}
			toks := j.stream.take()
			if len(toks) > 0 && ev == nil {
				ev = newEvents(w)
			}
			touched := map[int]bool{}
			for _, tk := range toks {
				k := tk.prompt*n + tk.sample
				ts[k].ids = append(ts[k].ids, tk.id)
				touched[k] = true
			}
			for k, t := range ts {
				if touched[k] {
					if text := t.avail(); len(text) > sent[k] {
						ev.send(head, []any{map[string]any{"index": k, "text": text[sent[k]:], "logprobs": nil, "finish_reason": nil}}, nil)
						sent[k] = len(text)
					}
				}
			}
		}
	} else {
		resc <- s.sched.do(j)
	}
	res := <-resc
	if err := s.finish(ctx, res); err != nil {
		if ev == nil {
			return err
		}
		ev.sendError(err)
		return nil
	}
	ans := answers(res, stops)
	n := len(ans) / len(prompts)
	choices := make([]completionChoice, len(ans))
	var u usage
	for _, ids := range idss {
		u.PromptTokens += len(ids)
	}
	for i := range ans {
		a := &ans[i]
		u.CompletionTokens += len(a.smp.IDs)
		c := completionChoice{Index: i, Text: a.text, FinishReason: a.finish}
		if req.Logprobs != nil {
			lp := &completionLogprobs{}
			for t, id := range a.smp.IDs {
				lp.Tokens = append(lp.Tokens, s.tok.Decode([]int32{id}, false))
				lp.TokenLogprobs = append(lp.TokenLogprobs, a.smp.LogProbs[t])
				off := len(a.text)
				if t < len(a.offs) {
					off = min(off, a.offs[t][0])
				}
				lp.TextOffset = append(lp.TextOffset, off)
				if a.top != nil {
					m := map[string]float32{}
					for _, e := range a.top[t] {
						if _, dup := m[s.tok.Decode([]int32{e.ID}, false)]; !dup {
							m[s.tok.Decode([]int32{e.ID}, false)] = e.LogProb
						}
					}
					lp.TopLogprobs = append(lp.TopLogprobs, m)
				}
			}
			c.Logprobs = lp
		}
		if req.ReturnTokenIDs {
			c.TokenIDs, c.PromptIDs = nonNil(a.smp.IDs), idss[i/n]
		}
		choices[i] = c
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	if !req.Stream {
		head["object"], head["choices"], head["usage"] = "text_completion", choices, u
		writeJSON(w, head)
		return nil
	}
	if ev == nil {
		ev = newEvents(w)
	}
	for i := range ans {
		a, c := &ans[i], &choices[i]
		if len(a.text) > sent[i] {
			ev.send(head, []any{map[string]any{"index": i, "text": a.text[sent[i]:], "logprobs": nil, "finish_reason": nil}}, nil)
		}
		last := map[string]any{"index": i, "text": "", "logprobs": c.Logprobs, "finish_reason": c.FinishReason}
		if req.ReturnTokenIDs {
			last["token_ids"], last["prompt_token_ids"] = c.TokenIDs, c.PromptIDs
		}
		ev.send(head, []any{last}, nil)
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		ev.send(head, []any{}, &u)
	}
	ev.done()
	return nil
}
