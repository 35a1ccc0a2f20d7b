package apiclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Every way a request can fail gives an error that names the endpoint
// with its password masked: a refused connection, a timeout, a status
// error, a response the caller rejects, a cancelled wait between retries.
func TestErrorsMaskURLPassword(t *testing.T) {
	const secret = "hunter2-SECRET"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/slow":
			time.Sleep(200 * time.Millisecond)
		case "/v1/bad":
			http.Error(w, "no such model", http.StatusBadRequest)
		case "/v1/busy":
			http.Error(w, "busy", http.StatusServiceUnavailable)
		default:
			fmt.Fprint(w, `{}`)
		}
	}))
	defer srv.Close()
	withPass := func(base string) string { return strings.Replace(base, "http://", "http://bob:"+secret+"@", 1) + "/v1" }
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close() // nothing listens there any more
	zero := 0
	mk := func(url string, retries int, backoff float64) *Client {
		c, err := New(Config{URL: url, Model: "m", Retries: &retries, TimeoutS: 0.05, BackoffS: backoff, CacheDir: "off"}, "test")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ok := func([]byte) error { return nil }
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name  string
		c     *Client
		ctx   context.Context
		path  string
		parse func([]byte) error
	}{
		{"refused", mk(withPass(closed), zero, 0), context.Background(), "x", ok},
		{"timeout", mk(withPass(srv.URL), zero, 0), context.Background(), "slow", ok},
		{"status", mk(withPass(srv.URL), zero, 0), context.Background(), "bad", ok},
		{"rejected", mk(withPass(srv.URL), zero, 0), context.Background(), "ok", func([]byte) error { return errors.New("unusable") }},
		{"cancelled retry", mk(withPass(srv.URL), 2, 10), cancelled, "busy", ok},
	} {
		err := c.c.Post(c.ctx, c.path, map[string]int{"a": 1}, c.parse)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the password is in the error: %v", c.name, err)
		}
		if !strings.Contains(err.Error(), "bob:xxxxx@") {
			t.Errorf("%s: the error does not name the endpoint: %v", c.name, err)
		}
	}
}
