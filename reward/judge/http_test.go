package judge

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argrl/argrl/reward/internal/apiclient"
)

// stub is an OpenAI-compatible chat endpoint on the loopback address that
// answers with score(request), failing the first `fail` requests with 503.
func stub(t *testing.T, fail int32, delay time.Duration, score func(user string) string) (*httptest.Server, *int32) {
	t.Helper()
	var n int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := atomic.AddInt32(&n, 1)
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		var req chatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 2 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if req.Model != "judge-model" || !strings.Contains(req.Messages[0].Content, "Do NOT evaluate semantic correctness") {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		if k <= fail {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		if delay > 0 {
			time.Sleep(delay)
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": score(req.Messages[1].Content)}}}})
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func httpJudge(t *testing.T, url, cache string, retries int, timeout float64) *HTTP {
	t.Helper()
	j, err := NewHTTP(HTTPConfig{Config: apiclient.Config{URL: url + "/v1", Model: "judge-model", CacheDir: cache,
		Retries: &retries, BackoffS: 0.001, TimeoutS: timeout}})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestHTTPJudge(t *testing.T) {
	// The stub plays a judge: English generated values are a mismatch.
	srv, n := stub(t, 0, 0, func(user string) string {
		if strings.Contains(user, `Model-generated argument value: "dollars"`) {
			return "1.0"
		}
		return "Score: 2.0"
	})
	cache := t.TempDir()
	j := httpJudge(t, srv.URL, cache, 0, 5)
	ctx := context.Background()
	q := Query{Lang: "es", Utterance: "¿Cuánto en dólares?", Arg: "to_currency", Gold: "dólares", Value: "dollars"}
	if v, err := j.Judge(ctx, q); err != nil || v != Mismatch {
		t.Fatalf("dollars: %v %v, want mismatch", v, err)
	}
	if v, err := j.Judge(ctx, Query{Lang: "es", Gold: "dólares", Value: "dolares"}); err != nil || v != Right {
		t.Fatalf("dolares: %v %v, want minor", v, err)
	}
	// Exact and normalized matches never reach the endpoint.
	if v, err := j.Judge(ctx, Query{Lang: "es", Gold: "dólares", Value: " DÓLARES "}); err != nil || v != Exact {
		t.Fatalf("DÓLARES: %v %v, want exact", v, err)
	}
	if got := atomic.LoadInt32(n); got != 2 {
		t.Fatalf("%d requests, want 2", got)
	}
	// The same request again is answered from the on-disk cache, also by a
	// new judge over the same folder.
	j2 := httpJudge(t, srv.URL, cache, 0, 5)
	if v, err := j2.Judge(ctx, q); err != nil || v != Mismatch {
		t.Fatalf("cached: %v %v", v, err)
	}
	if got := atomic.LoadInt32(n); got != 2 {
		t.Fatalf("%d requests after a cached query, want 2", got)
	}
}

func TestHTTPJudgeRetries(t *testing.T) {
	srv, n := stub(t, 2, 0, func(string) string { return "2.5" })
	j := httpJudge(t, srv.URL, "off", 3, 5)
	if v, err := j.Judge(context.Background(), Query{Lang: "fr", Gold: "lundi", Value: "Lundi matin"}); err != nil || v != Exact {
		t.Fatalf("%v %v, want exact after retries", v, err)
	}
	if got := atomic.LoadInt32(n); got != 3 {
		t.Fatalf("%d attempts, want 3 (two 503s then success)", got)
	}
	// Too few retries: the error names the status.
	srv2, _ := stub(t, 5, 0, func(string) string { return "2.5" })
	j = httpJudge(t, srv2.URL, "off", 1, 5)
	if _, err := j.Judge(context.Background(), Query{Lang: "fr", Gold: "lundi", Value: "mardi"}); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("err %v, want a 503 error", err)
	}
}

func TestHTTPJudgeTimeoutAndBadAnswers(t *testing.T) {
	srv, n := stub(t, 0, 300*time.Millisecond, func(string) string { return "2.0" })
	j := httpJudge(t, srv.URL, "off", 1, 0.05)
	start := time.Now()
	if _, err := j.Judge(context.Background(), Query{Lang: "it", Gold: "domani", Value: "tomorrow"}); err == nil {
		t.Fatal("no error from a server slower than the timeout")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("timed-out judge took %v", d)
	}
	if got := atomic.LoadInt32(n); got != 2 {
		t.Fatalf("%d attempts, want 2 (timeout, one retry)", got)
	}
	for _, answer := range []string{"maybe", "3.7"} {
		srv, _ := stub(t, 0, 0, func(string) string { return answer })
		j := httpJudge(t, srv.URL, t.TempDir(), 0, 5)
		if _, err := j.Judge(context.Background(), Query{Lang: "it", Gold: "domani", Value: "tomorrow"}); err == nil {
			t.Errorf("answer %q: no error", answer)
		}
	}
	if _, err := NewHTTP(HTTPConfig{}); err == nil || !strings.Contains(err.Error(), "url") {
		t.Errorf("missing url: err %v", err)
	}
	if _, err := New(Config{Name: "oracle"}); err == nil || !strings.Contains(err.Error(), "builtin") {
		t.Errorf("unknown judge: err %v", err)
	}
}
