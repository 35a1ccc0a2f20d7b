package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// judgeServer is an OpenAI-compatible chat endpoint on the loopback address
// that counts the requests it gets and answers each with handle.
func judgeServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) (url string, requests *int32) {
	t.Helper()
	var n int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atomic.AddInt32(&n, 1)
		// Read the whole request, so that a client hanging up cancels r's context.
		if _, err := io.Copy(io.Discard, r.Body); err != nil || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		handle(w, r)
	}))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv.URL + "/v1", &n
}

// answer replies with one chat completion whose content is text.
func answer(text string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": text}}}})
	}
}

func readRates(t *testing.T, path string) map[string]float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]float64
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// `train eval --config F` scores with the config's reward settings, as
// training does: judge http with reward.judge_http (which eval ignored,
// failing with "url is required"), and reward.alc_threshold.
func TestEvalConfigJudgeSettings(t *testing.T) {
	dir := t.TempDir()
	dataPath := writeFile(t, dir, "data.jsonl", cliData)
	preds := writeFile(t, dir, "preds.jsonl", predLine(t, "joke", "¡Claro!")+predLine(t, "cur", spanishPred))
	// The judge calls every value the right language (RM-3 2.5): the
	// Spanish values of "cur" pass ALC, which the builtin judge fails.
	url, requests := judgeServer(t, answer("2.5"))
	cfg := func(name, extra string) string {
		return writeFile(t, dir, name, "judge: http\nreward:\n  judge_http: {url: \""+url+"\", model: judge-model, cache_dir: \"off\", retries: 0}\n"+extra)
	}
	out := filepath.Join(dir, "m.json")
	if _, _, err := runCmd(t, newEvalCmd, "--config", cfg("http.yaml", ""), "--data", dataPath, "--predictions", preds, "--out", out); err != nil {
		t.Fatalf("eval --config with judge: http: %v", err)
	}
	if n := atomic.LoadInt32(requests); n != 3 {
		t.Errorf("the judge got %d requests, want 3 (dólares twice, libras)", n)
	}
	if rep := readRates(t, out); rep["alc"] != 1 || rep["fcm"] != 0.5 {
		t.Errorf("with the http judge: alc %v fcm %v, want 1 and 0.5 (the builtin judge gives alc 0.5)", rep["alc"], rep["fcm"])
	}
	// reward.alc_threshold: 2.5 on the RM-3 scale is 2.0 on RM-2's, which
	// fails a threshold of 2.1.
	atomic.StoreInt32(requests, 0)
	if _, _, err := runCmd(t, newEvalCmd, "--config", cfg("thr.yaml", "  alc_threshold: 2.1\n"), "--data", dataPath, "--predictions", preds, "--out", out); err != nil {
		t.Fatal(err)
	}
	if rep := readRates(t, out); rep["alc"] != 0.5 {
		t.Errorf("alc_threshold 2.1: alc %v, want 0.5", rep["alc"])
	}
	// A flag given explicitly overrides its key: --judge builtin asks nothing.
	atomic.StoreInt32(requests, 0)
	if _, _, err := runCmd(t, newEvalCmd, "--config", cfg("http.yaml", ""), "--judge", "builtin", "--data", dataPath, "--predictions", preds, "--out", out); err != nil {
		t.Fatal(err)
	}
	if n := atomic.LoadInt32(requests); n != 0 || readRates(t, out)["alc"] != 0.5 {
		t.Errorf("--judge builtin over judge: http: %d requests, alc %v; want 0 and 0.5", n, readRates(t, out)["alc"])
	}
}

// `train reward --judge http`: --judge-retries bounds the attempts on a
// failing endpoint and --judge-timeout each attempt on a silent one (the
// defaults, 30 s and 3 retries, cost 127 s for one request).
func TestRewardJudgeHTTPFlags(t *testing.T) {
	dir := t.TempDir()
	dataPath := writeFile(t, dir, "data.jsonl", cliData)
	preds := writeFile(t, dir, "preds.jsonl", predLine(t, "cur", spanishPred))
	base := []string{"--reward", "rm3", "--data", dataPath, "--predictions", preds, "--judge", "http", "--judge-model", "m", "--judge-cache", "off"}

	failing, n := judgeServer(t, func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) })
	for _, retries := range []string{"0", "2"} {
		atomic.StoreInt32(n, 0)
		_, _, err := runCmd(t, newRewardCmd, append(base, "--judge-url", failing, "--judge-retries", retries, "--judge-backoff", "0.001")...)
		if err == nil || !strings.Contains(err.Error(), "503") {
			t.Errorf("--judge-retries %s on a failing judge: err %v, want the 503", retries, err)
		}
		if got, want := atomic.LoadInt32(n), int32(1+int(retries[0]-'0')); got != want {
			t.Errorf("--judge-retries %s: %d attempts, want %d", retries, got, want)
		}
	}

	// A judge that never answers: each attempt ends at --judge-timeout.
	silent, m := judgeServer(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	_, _, err := runCmd(t, newRewardCmd, append(base, "--judge-url", silent, "--judge-timeout", "0.5", "--judge-retries", "0")...)
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("silent judge with --judge-timeout 0.5: err %v, want a deadline", err)
	}
	if got := atomic.LoadInt32(m); got > 1 {
		t.Errorf("silent judge, --judge-retries 0: %d attempts, want at most 1", got)
	}

	for _, c := range []struct{ flag, val, want string }{
		{"--judge-timeout", "0", "--judge-timeout 0"},
		{"--judge-timeout", "-1", "--judge-timeout -1"},
		{"--judge-backoff", "0", "--judge-backoff 0"},
		{"--judge-retries", "-1", "--judge-retries -1"},
	} {
		_, _, err := runCmd(t, newRewardCmd, append(base, "--judge-url", failing, c.flag, c.val)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: err %v, want one naming it", c.flag, c.val, err)
		}
	}
}
