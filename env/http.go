package env

// The http environment: each assistant turn's calls are POSTed to a URL
// as JSON, and the reply gives the messages that follow.
//
//	request   {"episode": "<unique per rollout>", "record_id": "...", "turn": 0,
//	           "calls": [{"name": "f", "arguments": {...}}],
//	           "record": {...}}              // the whole record, on turn 0 only
//	reply     {"messages": [{"role": "tool", "name": "f", "content": "..."}],
//	           "done": false,
//	           "state": <any JSON>}          // optional: the world's state so far
//	close     {"episode": "...", "close": true} when the episode ends (reply ignored)
//
// A reply needs one tool message per call at least; it may add user
// messages after them. A request that does not answer within the timeout,
// a non-2xx status or a malformed reply is an error. Errors never show
// the URL's user information (user:password@).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/internal/redact"
)

// HTTP is the http environment.
type HTTP struct {
	url      string
	redacted string
	client   *http.Client
	timeout  time.Duration
}

// NewHTTP returns an environment that POSTs to rawURL, each request
// within timeout (0: 30 s).
func NewHTTP(rawURL string, timeout time.Duration) (*HTTP, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("env: http: url %q is not an http(s) URL", redact.URL(rawURL))
	}
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return &HTTP{url: rawURL, redacted: redact.URL(rawURL), client: &http.Client{Timeout: timeout}, timeout: timeout}, nil
}

// Name returns "http".
func (h *HTTP) Name() string { return "http" }

// Open starts an episode; nothing is sent until the first turn.
func (h *HTTP) Open(_ context.Context, rec *data.Record, episode string) (Session, error) {
	return &httpSession{h: h, rec: rec, episode: episode}, nil
}

type httpSession struct {
	h       *HTTP
	rec     *data.Record
	episode string
	turn    int
	state   json.RawMessage
}

type httpCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

type httpRequest struct {
	Episode  string       `json:"episode"`
	RecordID string       `json:"record_id,omitempty"`
	Turn     int          `json:"turn"`
	Calls    []httpCall   `json:"calls,omitempty"`
	Record   *data.Record `json:"record,omitempty"`
	Close    bool         `json:"close,omitempty"`
}

type httpReply struct {
	Messages []data.Message  `json:"messages"`
	Done     bool            `json:"done"`
	State    json.RawMessage `json:"state"`
}

func (s *httpSession) Exec(ctx context.Context, calls []format.ParsedCall) ([]data.Message, bool, error) {
	req := httpRequest{Episode: s.episode, RecordID: s.rec.ID, Turn: s.turn}
	for _, c := range calls {
		args := c.Arguments
		if args == nil {
			args = map[string]any{}
		}
		req.Calls = append(req.Calls, httpCall{Name: c.Name, Arguments: args})
	}
	if s.turn == 0 {
		req.Record = s.rec
	}
	s.turn++
	body, err := s.h.post(ctx, req)
	if err != nil {
		return nil, false, err
	}
	var rep httpReply
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&rep); err != nil {
		return nil, false, s.h.errorf("malformed reply: %v", err)
	}
	tools := 0
	for i, m := range rep.Messages {
		switch {
		case m.Role == "tool" && i == tools:
			tools++
		case m.Role == "user" && i >= tools:
		default:
			return nil, false, s.h.errorf("reply message %d has role %q: want tool messages, then user messages", i, m.Role)
		}
	}
	if !rep.Done && tools < len(calls) {
		return nil, false, s.h.errorf("reply has %d tool messages for %d calls", tools, len(calls))
	}
	if len(rep.State) > 0 && string(rep.State) != "null" {
		s.state = rep.State
	}
	return rep.Messages, rep.Done, nil
}

func (s *httpSession) State() json.RawMessage { return s.state }

// Close tells the server the episode is over.
func (s *httpSession) Close() error {
	if s.turn == 0 {
		return nil // the server never heard of it
	}
	_, err := s.h.post(context.Background(), httpRequest{Episode: s.episode, RecordID: s.rec.ID, Turn: s.turn, Close: true})
	return err
}

// post sends one request and returns the reply body.
func (h *HTTP) post(ctx context.Context, req httpRequest) ([]byte, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("env: http: encode the request: %w", err)
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(b))
	if err != nil {
		return nil, h.errorf("%v", h.scrub(err))
	}
	r.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(r)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL, user information included
		}
		if ue != nil && ue.Timeout() {
			return nil, h.errorf("no reply within %v: %v", h.timeout, h.scrub(err))
		}
		return nil, h.errorf("%v", h.scrub(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, h.errorf("read the reply: %v", h.scrub(err))
	}
	if resp.StatusCode/100 != 2 {
		snippet := strings.TrimSpace(string(body))
		if len(snippet) > 200 {
			snippet = snippet[:200] + "..."
		}
		return nil, h.errorf("status %s: %s", resp.Status, snippet)
	}
	return body, nil
}

// errorf is an error naming the redacted URL.
func (h *HTTP) errorf(format string, args ...any) error {
	return fmt.Errorf("env: http: POST %s: %s", h.redacted, h.scrub(fmt.Errorf(format, args...)))
}

// scrub masks the password of any URL in an error text.
func (h *HTTP) scrub(err error) string { return redact.Text(err.Error()) }
