package metrics

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestServeAddr(t *testing.T) {
	for in, want := range map[string]string{":8080": "127.0.0.1:8080", "8080": "127.0.0.1:8080", "0.0.0.0:9000": "0.0.0.0:9000",
		"localhost:80": "localhost:80", "[::1]:8080": "[::1]:8080", "127.0.0.1:0": "127.0.0.1:0"} {
		if got, err := ServeAddr(in); err != nil || got != want {
			t.Errorf("ServeAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "host:", ":99999", "localhost", "a:b:c"} {
		if got, err := ServeAddr(in); err == nil {
			t.Errorf("ServeAddr(%q) = %q, want an error", in, got)
		}
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// The served page is live, is rebuilt when metrics.jsonl grows, and the
// server stops when its context ends.
func TestServeRebuildsAndStops(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	syntheticRun(t, dir, 20, 0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var log strings.Builder
	go func() { done <- Serve(ctx, ln, []string{dir}, &log) }()
	base := "http://" + ln.Addr().String()

	code, page := get(t, base+"/")
	d := pageData(t, []byte(page))
	if code != 200 || !d.Live || d.Runs[0].LastStep != 20 || !strings.Contains(page, "connect-src 'self'") {
		t.Fatalf("GET /: %d, live %v, last step %d", code, d.Live, d.Runs[0].LastStep)
	}
	_, stamp := get(t, base+"/stamp")
	if stamp != d.Stamp {
		t.Fatalf("stamp %q, page stamp %q", stamp, d.Stamp)
	}
	if code, _ := get(t, base+"/config.yaml"); code != 404 {
		t.Fatalf("GET /config.yaml: %d, want 404 (only the page is served)", code)
	}

	f, err := os.OpenFile(filepath.Join(dir, File), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("{\"step\":21,\"kind\":\"train\",\"loss\":0.5}\n")
	f.Close()
	if _, s2 := get(t, base+"/stamp"); s2 == stamp {
		t.Fatal("the stamp did not change with metrics.jsonl")
	}
	_, page = get(t, base+"/report.html")
	if d := pageData(t, []byte(page)); d.Runs[0].LastStep != 21 {
		t.Fatalf("after a new line: last step %d, want 21", d.Runs[0].LastStep)
	}

	os.Rename(filepath.Join(dir, File), filepath.Join(dir, File+".away"))
	if code, page := get(t, base+"/"); code != 503 || !strings.Contains(page, "No report yet") || !strings.Contains(page, File) {
		t.Fatalf("without metrics.jsonl: %d %q", code, page)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop")
	}
	if strings.Count(log.String(), "rebuilt") != 2 {
		t.Fatalf("log %q, want two rebuilds", log.String())
	}
}
