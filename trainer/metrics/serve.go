package metrics

// `train plot --serve ADDR`: the run report over HTTP while the run goes
// on. GET / (or /report.html) returns the page, rebuilt when the run's
// files changed since the last build (Stamp); GET /stamp returns the
// current stamp, which the live page polls every 5 s to reload itself.
// While the page cannot be built (a run that has not logged a step yet),
// / answers 503 with a note that reloads itself every 5 s.
// Nothing else is served, so the run directory's files stay private.

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ServeAddr resolves a --serve address: a bare port or ":port" binds
// 127.0.0.1; a host given (0.0.0.0, a name, [::1]) is kept.
func ServeAddr(addr string) (string, error) {
	if addr == "" {
		return "", errors.New("serve: empty address (want e.g. :8080 or 127.0.0.1:8080)")
	}
	if !strings.Contains(addr, ":") {
		addr = ":" + addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("serve: address %q: %w", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("serve: address %q: want a port number 0…65535, got %q", addr, port)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// reportServer caches the page until the stamp changes.
type reportServer struct {
	runs  []string
	log   io.Writer
	mu    sync.Mutex
	stamp string
	page  []byte
}

func (s *reportServer) current() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stamp(s.runs)
	if s.page != nil && st == s.stamp {
		return s.page, nil
	}
	page, err := Report(s.runs, ReportOptions{Live: true})
	if err != nil {
		return nil, err
	}
	s.page, s.stamp = page, st
	fmt.Fprintf(s.log, "serve: rebuilt the report (%d bytes)\n", len(page))
	return page, nil
}

func (s *reportServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	switch r.URL.Path {
	case "/", "/" + ReportFile:
		page, err := s.current()
		if err != nil { // e.g. a run that has not logged its first step yet
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "<!DOCTYPE html>\n<meta charset=\"utf-8\">\n<meta http-equiv=\"refresh\" content=\"5\">\n"+
				"<title>argrl run report</title>\n<p>No report yet (this page reloads every 5 s): %s</p>\n", html.EscapeString(err.Error()))
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if _, err := w.Write(page); err != nil {
			fmt.Fprintf(s.log, "serve: %v\n", err)
		}
	case "/stamp":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if _, err := io.WriteString(w, Stamp(s.runs)); err != nil {
			fmt.Fprintf(s.log, "serve: %v\n", err)
		}
	default:
		http.NotFound(w, r)
	}
}

// Serve serves the report of runs on ln until ctx ends, then shuts the
// server down, letting requests in flight finish (at most 5 s).
func Serve(ctx context.Context, ln net.Listener, runs []string, log io.Writer) error {
	if len(runs) == 0 {
		return errors.New("serve: no run directory")
	}
	if log == nil {
		log = io.Discard
	}
	srv := &http.Server{Handler: &reportServer{runs: runs, log: log}, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
