package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeDrainsOnSIGTERM: `train serve` with --api-key-env answers only
// with the bearer key (never printed); on SIGTERM it finishes the request
// in flight (a 200 with its whole answer), then exits 0.
func TestServeDrainsOnSIGTERM(t *testing.T) {
	const key = "sk-argrl-secret-4711"
	cmd := trainCmd(t, "serve", "--model", "../../configs/demo/base-model", "--listen", "127.0.0.1:0",
		"--api-key-env", "ARGRL_TEST_SERVE_KEY", "--seed", "3", "--drain", "2m")
	cmd.Env = append(cmd.Env, "ARGRL_TEST_SERVE_KEY="+key)
	c := &child{cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.err = cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			cmd.Process.Kill()
			<-c.done
		}
	})
	re := regexp.MustCompile(`listening on (http://[0-9.:]+)`)
	var url string
	for deadline := time.Now().Add(2 * time.Minute); url == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-c.done:
			t.Fatalf("serve exited:\n%s", c.stderr.String())
		default:
		}
		if m := re.FindStringSubmatch(c.stderr.String()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		t.Fatalf("serve did not start:\n%s", c.stderr.String())
	}
	call := func(auth, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/completions", strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := call("", `{"model":"base","prompt":[5,6],"max_tokens":2}`); code != 401 {
		t.Fatalf("no key: status %d, want 401", code)
	}
	type result struct {
		code int
		body string
	}
	got := make(chan result, 1)
	go func() {
		code, body := call("Bearer "+key, `{"model":"base","prompt":[5,6,7],"max_tokens":300,"ignore_eos":true}`)
		got <- result{code, body}
	}()
	// Wait until the request runs in the engine, then SIGTERM.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		req, _ := http.NewRequest(http.MethodGet, url+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), "argrl_running_requests 1\n") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the request never ran:\n%s", c.stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.code != 200 || !strings.Contains(r.body, `"finish_reason":"length"`) || !strings.Contains(r.body, `"completion_tokens":300`) {
		t.Errorf("the request in flight at SIGTERM: %d %s", r.code, r.body)
	}
	if code := c.wait(t); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0:\n%s", code, c.stderr.String())
	}
	logs := c.stderr.String()
	if !strings.Contains(logs, "draining") || !strings.Contains(logs, "serve: stopped") {
		t.Errorf("stderr does not tell the drain:\n%s", logs)
	}
	if strings.Contains(logs, key) {
		t.Errorf("the API key was printed:\n%s", logs)
	}
}
