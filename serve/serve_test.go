package serve_test

import (
	"bufio"
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

// TestDisconnect: a client that goes away leaves the engine's batch at
// once (the cancelled counter moves while the other request still runs),
// its KV pages back in the pool; the request it shared the batch with is
// untouched and gets exactly the answer it gets alone.
func TestDisconnect(t *testing.T) {
	s := servetest.Start(t, servetest.BaseModel(), serve.Options{})
	body := func(id string, n int) string {
		return `{"model":"base","prompt":[5,9,14],"max_tokens":` + fmt.Sprint(n) + `,"ignore_eos":true,"temperature":1,"seed":5,"sample_id":"` + id + `","return_token_ids":true}`
	}
	var alone struct {
		Choices []struct {
			TokenIDs []int32 `json:"token_ids"`
		} `json:"choices"`
	}
	code, b := post(t, s.URL+"/v1/completions", "", body("keep", 300))
	if code != 200 || json.Unmarshal(b, &alone) != nil || len(alone.Choices) != 1 || len(alone.Choices[0].TokenIDs) != 300 {
		t.Fatalf("alone: %d %.300s", code, b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	var keepCode int
	var keepBody []byte
	go func() {
		defer wg.Done()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/completions", strings.NewReader(body("drop", 1000)))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitMetric(t, s.URL, "argrl_running_requests", 1) // "drop" decodes; "keep" joins it
	go func() {
		defer wg.Done()
		keepCode, keepBody = post(t, s.URL+"/v1/completions", "", body("keep", 300))
	}()
	waitMetric(t, s.URL, "argrl_running_requests", 2)
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
	if got := metric(t, s.URL, "argrl_completion_tokens_total"); got != 600 {
		t.Errorf("completion tokens %v, want 600 (answered: 300 alone, 300 kept; the cancelled one counts none)", got)
	}
	if q, r := metric(t, s.URL, "argrl_queue_depth"), metric(t, s.URL, "argrl_running_requests"); q != 0 || r != 0 {
		t.Errorf("queue depth %v, running %v after every request ended", q, r)
	}
	free, total := metric(t, s.URL, "argrl_kv_pages_free"), metric(t, s.URL, "argrl_kv_pages_total")
	if total == 0 || free != total {
		t.Errorf("%v of %v KV pages free after every request ended", free, total)
	}
}

// TestStreamsWhileGenerating: a streamed completion's first text arrives
// while the request is still in the engine's batch (it streams, not sends
// at the end), and the deltas join into the whole answer's text.
func TestStreamsWhileGenerating(t *testing.T) {
	s := servetest.Start(t, servetest.BaseModel(), serve.Options{})
	body := `{"model":"base","prompt":"The weather","max_tokens":400,"ignore_eos":true,"temperature":0.8,"seed":3`
	code, b := post(t, s.URL+"/v1/completions", "", body+`}`)
	var whole struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	if code != 200 || json.Unmarshal(b, &whole) != nil || len(whole.Choices) != 1 {
		t.Fatalf("whole: %d %.300s", code, b)
	}
	resp, err := http.Post(s.URL+"/v1/completions", "application/json", strings.NewReader(body+`,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var text strings.Builder
	chunks, early := 0, -1.0
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var ev struct {
			Choices []struct {
				Text         string  `json:"text"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		for _, c := range ev.Choices {
			if c.Text != "" && c.FinishReason == nil {
				chunks++
				if early < 0 {
					early = metric(t, s.URL, "argrl_running_requests")
				}
			}
			text.WriteString(c.Text)
		}
	}
	if early != 1 {
		t.Errorf("running requests %v when the first text arrived; want 1 (still generating)", early)
	}
	if chunks < 2 || text.String() != whole.Choices[0].Text {
		t.Errorf("%d text chunks joining into %q; the whole answer is %q", chunks, text.String(), whole.Choices[0].Text)
	}
}
