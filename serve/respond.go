package serve

// The two generation endpoints and their responses, whole or as
// server-sent events. The engine hands back finished groups, so a streamed
// response is sent when its samples are done, one event per token (tool
// calls: one event with the name, one with the arguments).

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

// piece is the text token t produced, within the served (cut) text.
func (a *answer) piece(t int) string {
	if t >= len(a.offs) {
		return ""
	}
	lo, hi := min(a.offs[t][0], len(a.text)), min(a.offs[t][1], len(a.text))
	return a.text[lo:hi]
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
	res, err := s.run(r.Context(), &req.sampling, adapter, []rollout.Prompt{{IDs: ids}}, topLP)
	if err != nil {
		return err
	}
	stops, _ := req.stops()
	id, created := newID("chatcmpl-"), time.Now().Unix()
	ans := answers(res, stops)
	choices := make([]chatChoice, len(ans))
	u := usage{PromptTokens: len(ids)}
	for i := range ans {
		a := &ans[i]
		u.CompletionTokens += len(a.smp.IDs)
		content, calls := s.assistantMessage(prefix+a.text, tc, fmt.Sprintf("call_%s_%d", id[9:17], i))
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
	head := map[string]any{"id": id, "created": created, "model": req.Model, "system_fingerprint": "argrl"}
	if req.ReturnTokenIDs {
		head["prompt_token_ids"] = ids
	}
	if !req.Stream {
		head["object"], head["choices"], head["usage"] = "chat.completion", choices, u
		writeJSON(w, head)
		return nil
	}
	head["object"] = "chat.completion.chunk"
	ev := newEvents(w)
	for i := range ans {
		a, c := &ans[i], &choices[i]
		send := func(delta map[string]any, lps []tokenLogprob, finish any, extra map[string]any) {
			ch := map[string]any{"index": i, "delta": delta, "logprobs": nil, "finish_reason": finish}
			if lps != nil {
				ch["logprobs"] = chatLogprobs{Content: lps}
			}
			for k, v := range extra {
				ch[k] = v
			}
			ev.send(head, []any{ch}, nil)
		}
		send(map[string]any{"role": "assistant", "content": ""}, nil, nil, nil)
		var lps []tokenLogprob
		if c.Logprobs != nil {
			lps = c.Logprobs.Content
		}
		if len(c.Message.ToolCalls) == 0 {
			for t := range a.smp.IDs {
				var lp []tokenLogprob
				if lps != nil {
					lp = lps[t : t+1]
				}
				piece := a.piece(t)
				if t == 0 {
					piece = prefix + piece
				}
				send(map[string]any{"content": piece}, lp, nil, nil)
			}
		} else {
			if c.Message.Content != nil {
				send(map[string]any{"content": *c.Message.Content}, nil, nil, nil)
			}
			for k, tcall := range c.Message.ToolCalls {
				k := k
				first := toolCall{Index: &k, ID: tcall.ID, Type: "function", Function: functionCall{Name: tcall.Function.Name}}
				send(map[string]any{"tool_calls": []toolCall{first}}, nil, nil, nil)
				var lp []tokenLogprob
				if k == 0 {
					lp = lps
				}
				send(map[string]any{"tool_calls": []toolCall{{Index: &k, Function: functionCall{Arguments: tcall.Function.Arguments}}}}, lp, nil, nil)
			}
		}
		var extra map[string]any
		if req.ReturnTokenIDs {
			extra = map[string]any{"token_ids": c.TokenIDs}
		}
		send(map[string]any{}, nil, c.FinishReason, extra)
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		ev.send(head, []any{}, &u)
	}
	ev.done()
	return nil
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
	res, err := s.run(r.Context(), &req.sampling, adapter, prompts, topLP)
	if err != nil {
		return err
	}
	stops, _ := req.stops()
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
	head := map[string]any{"id": newID("cmpl-"), "created": time.Now().Unix(), "model": req.Model, "system_fingerprint": "argrl"}
	if !req.Stream {
		head["object"], head["choices"], head["usage"] = "text_completion", choices, u
		writeJSON(w, head)
		return nil
	}
	head["object"] = "text_completion"
	ev := newEvents(w)
	for i := range ans {
		a, c := &ans[i], &choices[i]
		for t := range a.smp.IDs {
			ev.send(head, []any{map[string]any{"index": i, "text": a.piece(t), "logprobs": nil, "finish_reason": nil}}, nil)
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
