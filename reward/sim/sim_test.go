package sim

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/argrl/argrl/reward/internal/apiclient"
)

func TestLexical(t *testing.T) {
	ctx := context.Background()
	for _, l := range []*Lexical{NewLexical(nil), NewLexical([]string{
		"the city must be City, State", "units are celsius or fahrenheit", "dates use YYYY-MM-DD"})} {
		s := func(a, b string) float64 {
			v, err := l.Sim(ctx, a, b)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		if v := s("format City, State", "format City, State"); math.Abs(v-1) > 1e-9 {
			t.Errorf("identical texts: %v, want 1", v)
		}
		if v := s("format City, State", "xyz qqq"); v != 0 {
			t.Errorf("disjoint texts: %v, want 0", v)
		}
		if v := s("", "anything"); v != 0 {
			t.Errorf("empty text: %v, want 0", v)
		}
		a, b := "the city needs the City, State format", "format City, State"
		if math.Abs(s(a, b)-s(b, a)) > 1e-12 {
			t.Errorf("not symmetric: %v vs %v", s(a, b), s(b, a))
		}
		near, far := s("the city needs the City, State format", "format City, State"), s("temperature in fahrenheit", "format City, State")
		if !(near > far && near > 0 && near < 1) {
			t.Errorf("related %v should beat unrelated %v, inside (0, 1)", near, far)
		}
	}
	if _, err := New(Config{Name: "bm25"}, nil); err == nil || !strings.Contains(err.Error(), "lexical") {
		t.Errorf("unknown similarity: err %v", err)
	}
}

func TestEmbedding(t *testing.T) {
	// The stub embeds a text as (count of 'a', count of 'b').
	var n int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atomic.AddInt32(&n, 1)
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != "emb" || len(req.Input) != 2 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var data []any
		for i := len(req.Input) - 1; i >= 0; i-- { // out of order on purpose
			s := req.Input[i]
			data = append(data, map[string]any{"index": i, "embedding": []float64{float64(strings.Count(s, "a")), float64(strings.Count(s, "b"))}})
		}
		json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	defer srv.Close()
	e, err := New(Config{Name: "http", HTTP: apiclient.Config{URL: srv.URL + "/v1", Model: "emb", CacheDir: t.TempDir()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v, err := e.Sim(ctx, "aa", "ab")
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 / math.Sqrt2; math.Abs(v-want) > 1e-9 {
		t.Errorf("sim(aa, ab) = %v, want %v", v, want)
	}
	if v, _ := e.Sim(ctx, "aa", "bb"); v != 0 {
		t.Errorf("orthogonal: %v, want 0", v)
	}
	if _, err := e.Sim(ctx, "aa", "ab"); err != nil {
		t.Fatal(err)
	}
	if got := atomic.LoadInt32(&n); got != 2 {
		t.Errorf("%d requests, want 2 (the repeat is cached)", got)
	}
}
