// Command serve is `train serve`'s load benchmark (sh bench/serve/bench.sh,
// in make bench): C concurrent clients each send K completion requests in
// a row (prompts of P random token ids, N new tokens, ignore_eos, T 0.6,
// top-p 0.95, no seed) to the server over loopback HTTP; it prints
// requests/s, new tokens/s and the p50/p99 request latency per C. The
// reference, measured first in the same process on the same engine, is one
// direct engine call decoding the C prompts together (what an ideal
// server's batch would be), the median of -reps calls: "served / engine"
// is the served tokens/s over it.
//
//	go run ./bench/serve -model DIR -tokenizer DIR [-clients 1,16,64] [-requests 4,2,1] [-reps 1]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/model/tokenizer"
	"github.com/argrl/argrl/rollout"
	"github.com/argrl/argrl/serve"
)

func main() {
	dir := flag.String("model", "", "model directory")
	tokDir := flag.String("tokenizer", "", "tokenizer directory (the model's vocabulary must hold it)")
	clients := flag.String("clients", "1,16,64", "concurrent clients, comma-separated")
	requests := flag.String("requests", "4,2,1", "requests each client sends in a row, one per -clients entry")
	plen := flag.Int("prompt", 32, "prompt tokens")
	nnew := flag.Int("new", 32, "new tokens per request")
	reps := flag.Int("reps", 1, "timed reference calls per client count (the median is kept)")
	flag.Parse()
	if err := run(*dir, *tokDir, *clients, *requests, *plen, *nnew, *reps); err != nil {
		fmt.Fprintln(os.Stderr, "bench/serve:", err)
		os.Exit(1)
	}
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want positive integers", s)
		}
		out = append(out, n)
	}
	return out, nil
}

type row struct {
	Clients, Requests, Tokens  int
	Wall                       float64
	ReqPerS, TokPerS, RefTokPS float64
	P50, P99                   float64
}

func run(dir, tokDir, clientsS, requestsS string, P, N, reps int) error {
	cs, err := ints(clientsS)
	if err != nil {
		return err
	}
	ks, err := ints(requestsS)
	if err != nil || len(ks) != len(cs) {
		return fmt.Errorf("-requests %q: want one count per -clients entry", requestsS)
	}
	be, _, err := kernels.Choose("cpu")
	if err != nil {
		return err
	}
	tok, err := tokenizer.Load(tokDir)
	if err != nil {
		return err
	}
	m, err := model.Open(dir, be, model.Options{})
	if err != nil {
		return err
	}
	eng, err := rollout.New(m, rollout.Options{Batch: 64, Tokenizer: tok})
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(1, 2))
	prompt := func() []int32 {
		ids := make([]int32, P)
		for i := range ids {
			ids[i] = int32(4 + r.IntN(tok.VocabSize()-4))
		}
		return ids
	}
	p := rollout.Params{G: 1, Temperature: 0.6, TopP: 0.95, MaxNewTokens: N, Seed: 3}
	ref := map[int]float64{}
	warm := p
	warm.MaxNewTokens = 4
	if _, err := eng.Generate(context.Background(), []rollout.Prompt{{ID: "warm", IDs: prompt()}}, warm); err != nil {
		return err
	}
	for _, c := range cs {
		ps := make([]rollout.Prompt, c)
		for i := range ps {
			ps[i] = rollout.Prompt{ID: fmt.Sprint("ref-", i), IDs: prompt()}
		}
		var ts []float64
		for range max(reps, 1) {
			t0 := time.Now()
			if _, err := eng.Generate(context.Background(), ps, p); err != nil {
				return err
			}
			ts = append(ts, time.Since(t0).Seconds())
		}
		slices.Sort(ts)
		ref[c] = float64(c*N) / ts[len(ts)/2] // the median
		fmt.Fprintf(os.Stderr, "bench/serve: reference: one engine call of %d prompts: %.1f tokens/s\n", c, ref[c])
	}
	srv, err := serve.New(m, eng, tok, serve.Options{Seed: 5})
	if err != nil {
		return err
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	var rows []row
	for li, c := range cs {
		k := ks[li]
		bodies := make([][]byte, c*k)
		for i := range bodies {
			b, _ := json.Marshal(map[string]any{"model": "base", "prompt": prompt(), "max_tokens": N, "ignore_eos": true, "temperature": 0.6, "top_p": 0.95})
			bodies[i] = b
		}
		lat := make([]float64, len(bodies))
		toks := make([]int, len(bodies))
		errs := make([]error, len(bodies))
		var wg sync.WaitGroup
		t0 := time.Now()
		for ci := range c {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range k {
					i := ci*k + j
					s := time.Now()
					toks[i], errs[i] = complete(hs.URL, bodies[i])
					lat[i] = time.Since(s).Seconds()
				}
			}()
		}
		wg.Wait()
		wall := time.Since(t0).Seconds()
		total := 0
		for i, e := range errs {
			if e != nil {
				return fmt.Errorf("clients %d, request %d: %w", c, i, e)
			}
			total += toks[i]
		}
		slices.Sort(lat)
		q := func(f float64) float64 { return lat[min(len(lat)-1, int(f*float64(len(lat))))] }
		rw := row{Clients: c, Requests: len(bodies), Tokens: total, Wall: wall, ReqPerS: float64(len(bodies)) / wall,
			TokPerS: float64(total) / wall, RefTokPS: ref[c], P50: q(0.50), P99: q(0.99)}
		rows = append(rows, rw)
		js, _ := json.Marshal(rw)
		fmt.Println(string(js))
	}
	fmt.Printf("\n| clients | requests | requests/s | new tokens/s | p50 latency s | p99 latency s | engine alone tokens/s | served / engine |\n|---|---|---|---|---|---|---|---|\n")
	for _, rw := range rows {
		fmt.Printf("| %d | %d | %.2f | %.1f | %.2f | %.2f | %.1f | %.2f× |\n", rw.Clients, rw.Requests, rw.ReqPerS, rw.TokPerS, rw.P50, rw.P99, rw.RefTokPS, rw.TokPerS/rw.RefTokPS)
	}
	fmt.Printf("\nP = %d prompt tokens, N = %d new tokens (ignore_eos), T 0.6, top-p 0.95; GOMAXPROCS %s; reference: median of %d engine calls.\n", P, N, os.Getenv("GOMAXPROCS"), max(reps, 1))
	hs.Close()
	srv.Close()
	eng.Close()
	m.Close()
	return be.Close()
}

// complete sends one completion request and returns its new tokens.
func complete(url string, body []byte) (int, error) {
	resp, err := http.Post(url+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("%s: %s", resp.Status, b)
	}
	var r struct {
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, err
	}
	return r.Usage.CompletionTokens, nil
}
