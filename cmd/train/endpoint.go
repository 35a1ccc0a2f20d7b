package main

// `train eval --endpoint URL`: the responses come from an OpenAI-compatible
// server (argrl's `train serve`, vLLM, ...) instead of a local model. Each
// record's messages and tools go out as one greedy chat completion; the
// answer's tool_calls are written back in the evaluated format, the
// arguments exactly as the server sent them (so 5 and 5.0 stay an int and
// a float for BFCL's checker), and an answer without calls is its content.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/argrl/argrl/data"
)

// endpointFlags are eval's --endpoint options.
type endpointFlags struct {
	url, model, keyEnv string
	concurrency        int
}

// endpointResponses asks the server for each record's answer, up to
// concurrency at a time, and hands them to each in record order.
func endpointResponses(ctx context.Context, ef *endpointFlags, formatName string, maxTokens int, recs []data.Record, each func(i int, text string, tokens int) error) error {
	if ef.concurrency < 1 {
		return fmt.Errorf("--endpoint-concurrency %d: want ≥ 1", ef.concurrency)
	}
	if maxTokens <= 0 {
		maxTokens = 512
	}
	key := ""
	if ef.keyEnv != "" {
		if key = os.Getenv(ef.keyEnv); key == "" {
			return fmt.Errorf("--endpoint-key-env %s: the variable is unset or empty", ef.keyEnv)
		}
	}
	base := strings.TrimSuffix(ef.url, "/")
	c := &http.Client{Timeout: 10 * time.Minute}
	modelName := ef.model
	if modelName == "" {
		var list struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err := endpointCall(ctx, c, http.MethodGet, base+"/models", key, nil, &list); err != nil {
			return err
		}
		if len(list.Data) == 0 {
			return fmt.Errorf("--endpoint %s: GET /models lists no model; give --endpoint-model", base)
		}
		modelName = list.Data[0].ID
	}
	type answer struct {
		text   string
		tokens int
		err    error
		ready  chan struct{}
	}
	out := make([]answer, len(recs))
	for i := range out {
		out[i].ready = make(chan struct{})
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(ef.concurrency, len(recs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				a := &out[i]
				a.text, a.tokens, a.err = endpointAnswer(ctx, c, base, key, modelName, formatName, maxTokens, &recs[i])
				if a.err != nil {
					a.err = fmt.Errorf("record %q: %w", recs[i].ID, a.err)
				}
				close(a.ready)
			}
		}()
	}
	go func() {
		defer close(work)
		for i := range recs {
			select {
			case work <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	defer wg.Wait()
	for i := range out {
		select {
		case <-out[i].ready:
		case <-ctx.Done():
			return ctx.Err()
		}
		if out[i].err != nil {
			return out[i].err
		}
		if err := each(i, out[i].text, out[i].tokens); err != nil {
			return err
		}
	}
	return nil
}

// endpointAnswer asks for one greedy answer to rec and returns it as text
// in the evaluated format.
func endpointAnswer(ctx context.Context, c *http.Client, base, key, modelName, formatName string, maxTokens int, rec *data.Record) (string, int, error) {
	type fn struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	}
	type tool struct {
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	type msg struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	req := struct {
		Model       string  `json:"model"`
		Messages    []msg   `json:"messages"`
		Tools       []tool  `json:"tools,omitempty"`
		Temperature float64 `json:"temperature"`
		MaxTokens   int     `json:"max_tokens"`
	}{Model: modelName, MaxTokens: maxTokens}
	for _, m := range rec.Messages {
		if len(m.ToolCalls) > 0 || m.Role == "tool" {
			return "", 0, fmt.Errorf("--endpoint evaluates single-turn records; this one has tool calls or results in its history")
		}
		req.Messages = append(req.Messages, msg{Role: m.Role, Content: m.Content})
	}
	for _, t := range rec.Tools {
		req.Tools = append(req.Tools, tool{Type: "function", Function: fn{Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	var resp struct {
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	body, err := json.Marshal(req)
	if err != nil {
		return "", 0, err
	}
	if err := endpointCall(ctx, c, http.MethodPost, base+"/chat/completions", key, body, &resp); err != nil {
		return "", 0, err
	}
	if len(resp.Choices) == 0 {
		return "", 0, fmt.Errorf("the server answered no choice")
	}
	m := resp.Choices[0].Message
	content := ""
	if m.Content != nil {
		content = *m.Content
	}
	if len(m.ToolCalls) == 0 {
		return content, resp.Usage.CompletionTokens, nil
	}
	var b strings.Builder
	for i, tc := range m.ToolCalls {
		args := strings.TrimSpace(tc.Function.Arguments)
		if args == "" {
			args = "{}"
		}
		name, _ := json.Marshal(tc.Function.Name)
		switch formatName {
		case "pythonic":
			if i == 0 {
				b.WriteByte('[')
			} else {
				b.WriteString(", ")
			}
			b.WriteString(tc.Function.Name + "(" + pythonArgs(args) + ")")
			if i == len(m.ToolCalls)-1 {
				b.WriteByte(']')
			}
		case "reason_tool":
			if i == 0 {
				b.WriteString("<reason>" + content + "</reason><tool>[")
			} else {
				b.WriteString(", ")
			}
			b.WriteString(`{"name": ` + string(name) + `, "arguments": ` + args + "}")
			if i == len(m.ToolCalls)-1 {
				b.WriteString("]</tool>")
			}
		default: // tool_call
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(`<tool_call>{"name": ` + string(name) + `, "arguments": ` + args + "}</tool_call>")
		}
	}
	return b.String(), resp.Usage.CompletionTokens, nil
}

// pythonArgs writes a JSON object's members as Python keyword arguments,
// numbers as the server wrote them; text that is not a JSON object is
// kept as is, so the format's parser reports it invalid.
func pythonArgs(args string) string {
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	var b strings.Builder
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return args
	}
	for first := true; dec.More(); first = false {
		k, err := dec.Token()
		if err != nil {
			return args
		}
		if !first {
			b.WriteString(", ")
		}
		b.WriteString(fmt.Sprint(k) + "=")
		if !pyValue(dec, &b) {
			return args
		}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') || dec.More() {
		return args
	}
	return b.String()
}

// pyValue writes the next JSON value as a Python literal.
func pyValue(dec *json.Decoder, b *strings.Builder) bool {
	t, err := dec.Token()
	if err != nil {
		return false
	}
	switch v := t.(type) {
	case json.Delim:
		closer, sep := "]", ", "
		if v == '{' {
			closer = "}"
		}
		b.WriteString(v.String())
		for first := true; dec.More(); first = false {
			if !first {
				b.WriteString(sep)
			}
			if v == '{' {
				k, err := dec.Token()
				if err != nil {
					return false
				}
				kj, _ := json.Marshal(k)
				b.Write(kj)
				b.WriteString(": ")
			}
			if !pyValue(dec, b) {
				return false
			}
		}
		if _, err := dec.Token(); err != nil {
			return false
		}
		b.WriteString(closer)
	case string:
		j, _ := json.Marshal(v)
		b.Write(j)
	case json.Number:
		b.WriteString(v.String())
	case bool:
		b.WriteString(map[bool]string{true: "True", false: "False"}[v])
	case nil:
		b.WriteString("None")
	}
	return true
}

// endpointCall sends one request and decodes the JSON answer; an error
// status is returned with the server's error message.
func endpointCall(ctx context.Context, c *http.Client, method, url, key string, body []byte, v any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return fmt.Errorf("--endpoint: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("--endpoint: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, url, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		msg := strings.TrimSpace(string(raw))
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		if len(msg) > 500 {
			msg = msg[:500] + "..."
		}
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, msg)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s %s: the answer is not the expected JSON: %w", method, url, err)
	}
	return nil
}
