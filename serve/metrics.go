package serve

// GET /metrics in Prometheus' text exposition format (version 0.0.4).

import (
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
)

// histogram is a Prometheus histogram with fixed upper bounds.
type histogram struct {
	mu     sync.Mutex
	bounds []float64
	counts []uint64 // per bucket, not cumulative; last is +Inf
	sum    float64
	n      uint64
}

func newHistogram(bounds ...float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := sort.SearchFloat64s(h.bounds, v)
	h.counts[i]++
	h.sum += v
	h.n++
}

func (h *histogram) write(w io.Writer, name, help string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i]
		fmt.Fprintf(w, "%s_bucket{le=\"%g\"} %d\n", name, b, cum)
	}
	cum += h.counts[len(h.bounds)]
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %g\n%s_count %d\n", name, cum, name, h.sum, name, h.n)
}

// metrics are the server's counters.
type metrics struct {
	mu       sync.Mutex
	requests map[[2]string]uint64 // (endpoint, status code) → count

	promptTokens, completionTokens atomic.Int64
	queueDepth, running            atomic.Int64
	pagesFree, pagesTotal          atomic.Int64
	cancelled                      atomic.Int64
	batch                          *histogram // sequences per engine call
	latency                        *histogram // seconds per request
}

func newMetrics() *metrics {
	return &metrics{
		requests: map[[2]string]uint64{},
		batch:    newHistogram(1, 2, 4, 8, 16, 32, 64, 128, 256),
		latency:  newHistogram(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
	}
}

func (m *metrics) request(endpoint string, code int) {
	m.mu.Lock()
	m.requests[[2]string{endpoint, fmt.Sprint(code)}]++
	m.mu.Unlock()
}

func (m *metrics) write(w io.Writer) {
	fmt.Fprintf(w, "# HELP argrl_requests_total HTTP requests answered, by endpoint and status code.\n# TYPE argrl_requests_total counter\n")
	m.mu.Lock()
	keys := make([][2]string, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	for _, k := range keys {
		fmt.Fprintf(w, "argrl_requests_total{endpoint=%q,code=%q} %d\n", k[0], k[1], m.requests[k])
	}
	m.mu.Unlock()
	for _, c := range []struct {
		name, typ, help string
		v               int64
	}{
		{"argrl_prompt_tokens_total", "counter", "Prompt tokens of the requests answered.", m.promptTokens.Load()},
		{"argrl_completion_tokens_total", "counter", "Tokens generated for the requests answered.", m.completionTokens.Load()},
		{"argrl_cancelled_requests_total", "counter", "Requests whose client went away while they ran.", m.cancelled.Load()},
		{"argrl_queue_depth", "gauge", "Requests waiting for the engine.", m.queueDepth.Load()},
		{"argrl_running_requests", "gauge", "Requests in the engine's batch.", m.running.Load()},
		{"argrl_kv_pages_free", "gauge", "KV-cache pages free after the last engine step.", m.pagesFree.Load()},
		{"argrl_kv_pages_total", "gauge", "KV-cache pages.", m.pagesTotal.Load()},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %d\n", c.name, c.help, c.name, c.typ, c.name, c.v)
	}
	m.batch.write(w, "argrl_batch_sequences", "Sequences per engine step.")
	m.latency.write(w, "argrl_request_latency_seconds", "Time from a request's arrival to its last byte.")
}
