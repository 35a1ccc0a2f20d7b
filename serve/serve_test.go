package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argrl/argrl/serve"
	"github.com/argrl/argrl/serve/servetest"
)

// metric reads one unlabelled sample of /metrics.
func metric(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no %s in /metrics:\n%s", name, b)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// waitMetric polls /metrics until name reaches want.
func waitMetric(t *testing.T, url, name string, want float64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Minute); metric(t, url, name) < want; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never reached %v", name, want)
		}
	}
}

// TestDisconnect: a client that goes away cancels its engine call at once
// (the cancelled counter moves while the other request still runs); the
// other request of the call is rerun and gets exactly the answer it gets
// alone.
func TestDisconnect(t *testing.T) {
	s := servetest.Start(t, servetest.BaseModel(), serve.Options{})
	body := func(id string) string {
		return `{"model":"base","prompt":[5,9,14],"max_tokens":500,"ignore_eos":true,"temperature":1,"seed":5,"sample_id":"` + id + `","return_token_ids":true}`
	}
	var alone struct {
		Choices []struct {
			TokenIDs []int32 `json:"token_ids"`
		} `json:"choices"`
	}
	code, b := post(t, s.URL+"/v1/completions", "", body("keep"))
	if code != 200 || json.Unmarshal(b, &alone) != nil || len(alone.Choices) != 1 || len(alone.Choices[0].TokenIDs) != 500 {
		t.Fatalf("alone: %d %.300s", code, b)
	}
	// A blocker holds the engine while "drop" and "keep" queue, so that the
	// next call takes both; then "drop" goes away mid-call.
	blocker := make(chan int, 1)
	go func() {
		code, _ := post(t, s.URL+"/v1/completions", "", `{"model":"base","prompt":[7,8],"max_tokens":100,"ignore_eos":true}`)
		blocker <- code
	}()
	waitMetric(t, s.URL, "argrl_running_requests", 1)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	var keepCode int
	var keepBody []byte
	go func() {
		defer wg.Done()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/completions", strings.NewReader(body("drop")))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	go func() {
		defer wg.Done()
		keepCode, keepBody = post(t, s.URL+"/v1/completions", "", body("keep"))
	}()
	waitMetric(t, s.URL, "argrl_queue_depth", 2)
	if code := <-blocker; code != 200 {
		t.Fatalf("blocker: %d", code)
	}
	waitMetric(t, s.URL, "argrl_running_requests", 2) // both in one call
	cancel()
	waitMetric(t, s.URL, "argrl_cancelled_requests_total", 1)
	wg.Wait()
	var kept struct {
		Choices []struct {
			TokenIDs []int32 `json:"token_ids"`
		} `json:"choices"`
	}
	if keepCode != 200 || json.Unmarshal(keepBody, &kept) != nil || len(kept.Choices) != 1 {
		t.Fatalf("the request that stayed: %d %.300s", keepCode, keepBody)
	}
	if fmt.Sprint(kept.Choices[0].TokenIDs) != fmt.Sprint(alone.Choices[0].TokenIDs) {
		t.Errorf("the request that stayed got other tokens than alone")
	}
	if got := metric(t, s.URL, "argrl_completion_tokens_total"); got != 1100 {
		t.Errorf("completion tokens %v, want 1100 (answered: 500 alone, 100 blocker, 500 kept; the cancelled one counts none)", got)
	}
	if q := metric(t, s.URL, "argrl_queue_depth"); q != 0 {
		t.Errorf("queue depth %v after every request ended", q)
	}
}
