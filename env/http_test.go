package env

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
)

// withUser puts user:password into an httptest URL.
func withUser(u string) string { return strings.Replace(u, "http://", "http://alice:s3cr3t-pw@", 1) }

// TestHTTPEnvironment: the request carries the episode, the turn, the
// calls and (on turn 0) the record; the reply's messages, done flag and
// state come back; the close request is sent.
func TestHTTPEnvironment(t *testing.T) {
	var mu sync.Mutex
	var reqs []httpRequest
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req httpRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad request", 400)
			return
		}
		u, p, _ := r.BasicAuth()
		mu.Lock()
		reqs = append(reqs, req)
		auth = append(auth, u+":"+p)
		mu.Unlock()
		if req.Close {
			return
		}
		var msgs []data.Message
		for _, c := range req.Calls {
			b, _ := json.Marshal(c.Arguments)
			msgs = append(msgs, data.Message{Role: "tool", Name: c.Name, Content: "ran " + c.Name + " " + string(b)})
		}
		if req.Turn == 1 {
			msgs = append(msgs, data.Message{Role: "user", Content: "and now?"})
		}
		json.NewEncoder(w).Encode(map[string]any{"messages": msgs, "done": req.Turn == 2, "state": map[string]int{"turn": req.Turn}})
	}))
	defer srv.Close()
	e, err := New(Config{Name: "http", URL: withUser(srv.URL), TimeoutS: 5})
	if err != nil {
		t.Fatal(err)
	}
	rec := &data.Record{ID: "r1", Lang: "en", Tools: []data.Tool{{Name: "f"}}, Messages: []data.Message{{Role: "user", Content: "hi"}}, Calls: []data.Call{}}
	ctx := context.Background()
	ep, err := Start(ctx, e, rec, "r1/0/3")
	if err != nil {
		t.Fatal(err)
	}
	call := []format.ParsedCall{{Name: "f", Arguments: map[string]any{"x": 1.0}}, {Name: "g"}}
	st, err := ep.Step(ctx, call)
	if err != nil || st.Done || len(st.Messages) != 2 || st.Messages[0].Content != `ran f {"x":1}` || st.Messages[1].Content != "ran g {}" {
		t.Fatalf("turn 0: %+v, %v", st, err)
	}
	st, err = ep.Step(ctx, call[:1])
	if err != nil || len(st.Messages) != 2 || st.Messages[1].Role != "user" {
		t.Fatalf("turn 1: %+v, %v", st, err)
	}
	st, err = ep.Step(ctx, call[:1])
	if err != nil || !st.Done || st.Messages != nil || string(ep.State()) != `{"turn":2}` {
		t.Fatalf("turn 2: %+v, %v, state %s", st, err, ep.State())
	}
	if err := ep.Close(); err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 4 || reqs[0].Record == nil || reqs[0].Record.ID != "r1" || reqs[1].Record != nil || !reqs[3].Close {
		t.Fatalf("requests %+v", reqs)
	}
	for i, r := range reqs {
		if r.Episode != "r1/0/3" || r.RecordID != "r1" || r.Turn != i || auth[i] != "alice:s3cr3t-pw" {
			t.Errorf("request %d: %+v (auth %q)", i, r, auth[i])
		}
	}
}

// TestHTTPErrors: a timeout, a bad status, a malformed reply and a reply
// short of tool messages are errors that name the URL without its
// password; a bad URL is refused.
func TestHTTPErrors(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case strings.Contains(string(body), `"slow"`):
			select {
			case <-release:
			case <-time.After(5 * time.Second):
			}
		case strings.Contains(string(body), `"boom"`):
			http.Error(w, "internal trouble", 500)
		case strings.Contains(string(body), `"garbage"`):
			io.WriteString(w, "not json")
		case strings.Contains(string(body), `"short"`):
			io.WriteString(w, `{"messages": [], "done": false}`)
		case strings.Contains(string(body), `"order"`):
			io.WriteString(w, `{"messages": [{"role": "user", "content": "x"}, {"role": "tool", "content": "y"}], "done": false}`)
		}
	}))
	defer srv.Close()
	defer close(release)
	url := withUser(srv.URL)
	h, err := NewHTTP(url, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct{ call, want string }{
		{"slow", "no reply within 200ms"},
		{"boom", "status 500 Internal Server Error: internal trouble"},
		{"garbage", "malformed reply"},
		{"short", "0 tool messages for 1 calls"},
		{"order", `message 1 has role "tool": want tool messages, then user messages`},
	} {
		s, _ := h.Open(ctx, &data.Record{ID: "e"}, "e")
		_, _, err := s.Exec(ctx, []format.ParsedCall{{Name: c.call}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.call, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "s3cr3t-pw") || !strings.Contains(err.Error(), "alice:xxxxx@") {
			t.Errorf("%s: the error does not redact the URL: %v", c.call, err)
		}
	}
	// A server that is gone.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := withUser(dead.URL)
	dead.Close()
	h2, _ := NewHTTP(deadURL, time.Second)
	s, _ := h2.Open(ctx, &data.Record{ID: "d"}, "d")
	if _, _, err := s.Exec(ctx, []format.ParsedCall{{Name: "f"}}); err == nil || strings.Contains(err.Error(), "s3cr3t-pw") {
		t.Errorf("dead server: %v", err)
	}
	for _, bad := range []string{"ftp://alice:s3cr3t-pw@host/x", "not a url", "http://alice:s3cr3t-pw@"} {
		_, err := NewHTTP(bad, 0)
		if err == nil || strings.Contains(err.Error(), "s3cr3t-pw") {
			t.Errorf("url %q: %v", bad, err)
		}
	}
	if _, err := New(Config{Name: "http", URL: url, TimeoutS: -1}); err == nil {
		t.Error("negative timeout accepted")
	}
}
