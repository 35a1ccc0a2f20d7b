package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/argrl/argrl/serve"
	"github.com/argrl/argrl/serve/servetest"
)

// TestServeMatchesGenerate is issue 35's one-set-of-numerics acceptance:
// a served completion, greedy or sampled with a seed, on the base model and
// on a LoRA adapter chosen by the "model" field, has the same tokens and
// the same log-probs (equal float32s) as `train generate` with the same
// model, adapter, prompt and sampling flags. Chat and completions both,
// all sent at once with other traffic in the same batch.
func TestServeMatchesGenerate(t *testing.T) {
	tmp := t.TempDir()
	base := servetest.BaseModel()
	adapter := filepath.Join(tmp, "tuned")
	servetest.WriteAdapter(t, base, adapter, 3, 0.05)
	s := servetest.Start(t, base, serve.Options{Adapters: map[string]string{"tuned": adapter}})
	type served struct {
		prompt   []int32
		ids      []int32
		logprobs []float64
	}
	chatReq := func(modelName, extra string) []served {
		body := `{"model":"` + modelName + `","messages":[{"role":"user","content":"What is the weather in Paris?"}],` +
			`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],` +
			`"max_tokens":16,"logprobs":true,"return_token_ids":true` + extra + `}`
		var r struct {
			PromptIDs []int32 `json:"prompt_token_ids"`
			Choices   []struct {
				TokenIDs []int32 `json:"token_ids"`
				Logprobs struct {
					Content []struct {
						Logprob float64 `json:"logprob"`
					} `json:"content"`
				} `json:"logprobs"`
			} `json:"choices"`
		}
		postJSON(t, s.URL+"/v1/chat/completions", body, &r)
		var out []served
		for _, c := range r.Choices {
			sv := served{prompt: r.PromptIDs, ids: c.TokenIDs}
			for _, lp := range c.Logprobs.Content {
				sv.logprobs = append(sv.logprobs, lp.Logprob)
			}
			out = append(out, sv)
		}
		return out
	}
	compReq := func(modelName string, prompt []int32, extra string) []served {
		pj, _ := json.Marshal(prompt)
		body := `{"model":"` + modelName + `","prompt":` + string(pj) + `,"max_tokens":16,"logprobs":0,"return_token_ids":true` + extra + `}`
		var r struct {
			Choices []struct {
				TokenIDs  []int32 `json:"token_ids"`
				PromptIDs []int32 `json:"prompt_token_ids"`
				Logprobs  struct {
					TokenLogprobs []float64 `json:"token_logprobs"`
				} `json:"logprobs"`
			} `json:"choices"`
		}
		postJSON(t, s.URL+"/v1/completions", body, &r)
		var out []served
		for _, c := range r.Choices {
			out = append(out, served{prompt: c.PromptIDs, ids: c.TokenIDs, logprobs: c.Logprobs.TokenLogprobs})
		}
		return out
	}
	prompt := []int32{5, 77, 301, 12, 9, 400, 33}
	type served3 = struct {
		name, extra, id string
		flags           []string
		n               int
	}
	cases := []served3{
		{"greedy", `,"temperature":0`, "0", []string{"--temperature", "0", "--n", "1", "--seed", "99"}, 1},
		{"seeded", `,"temperature":0.9,"top_p":0.95,"seed":7,"n":3,"sample_id":"s-1"`, "s-1", []string{"--temperature", "0.9", "--top-p", "0.95", "--seed", "7", "--n", "3"}, 3},
	}
	// Every served request runs at once, with other traffic (other
	// prompts, parameters and adapters, streamed or not) in the same
	// batch; then each is compared with generate alone.
	results := map[string][]served{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, tc := range cases {
		for _, m := range []string{"base", "tuned"} {
			for _, kind := range []string{"chat", "completions"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var got []served
					if kind == "chat" {
						got = chatReq(m, tc.extra)
					} else {
						got = compReq(m, prompt, tc.extra)
					}
					mu.Lock()
					results[tc.name+m+kind] = got
					mu.Unlock()
				}()
			}
		}
	}
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := []string{"base", "tuned"}[i%2]
			stream := ""
			if i%3 == 0 {
				stream = `,"stream":true`
			}
			resp, err := http.Post(s.URL+"/v1/completions", "application/json", strings.NewReader(fmt.Sprintf(
				`{"model":%q,"prompt":[%d,8,9],"max_tokens":%d,"temperature":0.7,"n":%d%s}`, m, 20+i, 10+7*i, 1+i%2, stream)))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("other traffic %d: status %d", i, resp.StatusCode)
			}
		}()
	}
	wg.Wait()
	for _, tc := range cases {
		for _, m := range []string{"base", "tuned"} {
			for _, kind := range []string{"chat", "completions"} {
				got := results[tc.name+m+kind]
				if len(got) != tc.n || len(got[0].prompt) == 0 {
					t.Fatalf("%s %s %s: %d choices, want %d", tc.name, m, kind, len(got), tc.n)
				}
				ids, _ := json.Marshal(got[0].prompt)
				pf := filepath.Join(tmp, fmt.Sprintf("p-%s-%s-%s.jsonl", tc.name, m, kind))
				os.WriteFile(pf, []byte(`{"id":"`+tc.id+`","token_ids":`+string(ids)+"}\n"), 0o644)
				args := append([]string{"--model", base, "--prompt-ids", pf, "--max-new-tokens", "16", "--compute", "f32"}, tc.flags...) // the server here runs f32 (serve.Options.Compute "")
				if m == "tuned" {
					args = append(args, "--adapter", adapter)
				}
				out, err := runGenerate(t, args...)
				if err != nil {
					t.Fatalf("generate %v: %v", args, err)
				}
				want := parseGen(t, out)
				if len(want) != tc.n {
					t.Fatalf("generate gave %d samples", len(want))
				}
				for i := range want {
					if fmt.Sprint(got[i].ids) != fmt.Sprint(want[i].TokenIDs) || len(got[i].ids) == 0 {
						t.Errorf("%s %s %s sample %d: served ids %v, generate %v", tc.name, m, kind, i, got[i].ids, want[i].TokenIDs)
						continue
					}
					for k := range want[i].Logprobs {
						if float32(got[i].logprobs[k]) != float32(want[i].Logprobs[k]) {
							t.Errorf("%s %s %s sample %d token %d: served log-prob %v, generate %v", tc.name, m, kind, i, k, got[i].logprobs[k], want[i].Logprobs[k])
						}
					}
				}
			}
		}
	}
	// The adapter changes the answers (the model field is not ignored).
	a, b := compReq("base", prompt, `,"temperature":0`), compReq("tuned", prompt, `,"temperature":0`)
	if fmt.Sprint(a[0].logprobs) == fmt.Sprint(b[0].logprobs) {
		t.Errorf("base and tuned give the same log-probs %v", a[0].logprobs)
	}
}

func postJSON(t *testing.T, url, body string, v any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Errorf("POST %s: %d %s", url, resp.StatusCode, b)
		return
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Errorf("POST %s: %v: %s", url, err, b)
	}
}
