package apiclient

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

func TestPostStatusHandling(t *testing.T) {
	var n int32
	status := []int{http.StatusTooManyRequests, http.StatusBadRequest}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := atomic.AddInt32(&n, 1)
		if r.Header.Get("Authorization") != "Bearer sekrit" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		if int(k) <= len(status) {
			http.Error(w, fmt.Sprint("status ", status[k-1]), status[k-1])
			return
		}
		fmt.Fprint(w, `{"ok": true}`)
	}))
	defer srv.Close()
	t.Setenv("TEST_KEY", "sekrit")
	retries := 5
	cache := t.TempDir()
	c, err := New(Config{URL: srv.URL, Model: "m", APIKeyEnv: "TEST_KEY", Retries: &retries, BackoffS: 0.001, CacheDir: cache}, "test")
	if err != nil {
		t.Fatal(err)
	}
	ok := func([]byte) error { return nil }
	// 429 is retried, 400 is not.
	err = c.Post(context.Background(), "x", map[string]int{"a": 1}, ok)
	if err == nil || !strings.Contains(err.Error(), "400") || atomic.LoadInt32(&n) != 2 {
		t.Fatalf("err %v after %d attempts, want the 400 after 2", err, n)
	}
	if err := c.Post(context.Background(), "x", map[string]int{"a": 1}, ok); err != nil {
		t.Fatal(err)
	}
	// A response the caller rejects is not cached.
	bad := func([]byte) error { return fmt.Errorf("unusable") }
	if err := c.Post(context.Background(), "y", 1, bad); err == nil {
		t.Fatal("parse error not returned")
	}
	files, _ := filepath.Glob(filepath.Join(cache, "*", "*.json"))
	if len(files) != 1 {
		t.Fatalf("%d cache files, want 1", len(files))
	}
	b, _ := os.ReadFile(files[0])
	if string(b) != `{"ok": true}` {
		t.Fatalf("cache holds %q", b)
	}
	if _, err := New(Config{URL: srv.URL}, "test"); err == nil || !strings.Contains(err.Error(), "model") {
		t.Fatalf("missing model: %v", err)
	}
}
