// Package serve is `train serve`: an OpenAI-compatible HTTP endpoint over
// argrl's rollout engine (docs/serve.md). The same engine, sampling streams
// and log-probs as `train generate`, so a served completion at temperature
// 0 or with a seed is the one generate prints.
//
//	api.go      wire types and the strict request decoder
//	chat.go     chat template, tool_choice, tool_calls parsed back
//	sched.go    the scheduler goroutine that owns the engine
//	respond.go  responses, server-sent events
//	metrics.go  GET /metrics
package serve

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/model/chat"
	"github.com/argrl/argrl/model/tokenizer"
	"github.com/argrl/argrl/rollout"
)

// Options configure a Server.
type Options struct {
	// Name is the base model's name in the "model" field (default "base").
	Name string
	// Adapters maps a model name to a PEFT adapter directory. Each is
	// loaded once (model.LoadAdapter) and served side by side with the
	// others and the base model in one batch; they may differ in rank and
	// targets.
	Adapters map[string]string
	// Format is the output format the model writes calls in (default
	// tool_call); Template the chat template (default: the model's family).
	Format, Template string
	// MaxBody bounds a request body in bytes (default 4 MiB).
	MaxBody int64
	// APIKey, when set, is required as "Authorization: Bearer KEY".
	APIKey string
	// Seed seeds the streams of requests without a seed (0: random).
	Seed uint64
	// Batch is the engine's rollout.Options.Batch (default 64): n is
	// checked against it.
	Batch int
}

// Server answers the OpenAI API over one model and its engine.
type Server struct {
	o      Options
	m      *model.Model
	tok    *tokenizer.Tokenizer
	tmpl   chat.Template
	format format.Format
	sched  *scheduler
	met    *metrics
	loaded map[string]int // adapter name → model.KVRow.Adapter
	maxLen int
	mux    *http.ServeMux
	t0     time.Time
}

// New returns a server over m and eng (which it owns from now on: nothing
// else may use them until Close).
func New(m *model.Model, eng *rollout.Engine, tok *tokenizer.Tokenizer, o Options) (*Server, error) {
	if tok == nil {
		return nil, fmt.Errorf("serve: the model needs a tokenizer")
	}
	if o.Name == "" {
		o.Name = "base"
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 4 << 20
	}
	if o.Batch <= 0 {
		o.Batch = 64
	}
	if o.Format == "" {
		o.Format = "tool_call"
	}
	if o.Template == "" {
		o.Template = m.Config.ModelType
	}
	tmpl, err := chat.Get(o.Template)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	f, err := format.Get(o.Format, format.Options{})
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	if _, dup := o.Adapters[o.Name]; dup {
		return nil, fmt.Errorf("serve: adapter name %q is the base model's name", o.Name)
	}
	if err := eng.PrepareServe(); err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	loaded := map[string]int{}
	for _, name := range sortedKeys(o.Adapters) { // every adapter loads before any request
		k, err := m.LoadAdapter(o.Adapters[name])
		if err != nil {
			return nil, fmt.Errorf("serve: adapter %s=%s: %w", name, o.Adapters[name], err)
		}
		loaded[name] = k
	}
	if o.Seed == 0 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("serve: seed: %w", err)
		}
		o.Seed = binary.LittleEndian.Uint64(b[:])
	}
	s := &Server{o: o, m: m, tok: tok, tmpl: tmpl, format: f, met: newMetrics(), maxLen: m.MaxLen(), t0: time.Now(), loaded: loaded}
	s.sched = newScheduler(m, eng, rollout.StopIDs(tok, m.Config), s.met, o.Seed)
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", s.endpoint("chat", http.MethodPost, s.chat))
	mux.HandleFunc("/v1/completions", s.endpoint("completions", http.MethodPost, s.completions))
	mux.HandleFunc("/v1/models", s.endpoint("models", http.MethodGet, s.models))
	mux.HandleFunc("/metrics", s.endpoint("metrics", http.MethodGet, s.metrics))
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		s.met.request("health", http.StatusOK)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"ok"}`+"\n")
	})
	mux.HandleFunc("/", s.endpoint("other", "", func(w http.ResponseWriter, r *http.Request) *apiError {
		return withStatus(http.StatusNotFound, "invalid_request_error", "not_found", "no route %s %s (docs/serve.md lists the endpoints)", r.Method, r.URL.Path)
	}))
	s.mux = mux
	return s, nil
}

// Handler is the HTTP handler.
func (s *Server) Handler() http.Handler { return s.mux }

// Close lets the engine finish the requests it holds, then stops it. Call
// it after http.Server.Shutdown has drained the requests.
func (s *Server) Close() { s.sched.close() }

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// statusWriter records the status code for the metrics.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(c int) {
	if w.code == 0 {
		w.code = c
	}
	w.ResponseWriter.WriteHeader(c)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// endpoint wraps a handler: method, bearer key, body limit, metrics, and
// an *apiError written as an OpenAI error object.
func (s *Server) endpoint(name, method string, h func(http.ResponseWriter, *http.Request) *apiError) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		w := &statusWriter{ResponseWriter: rw}
		defer func() {
			s.met.request(name, w.code)
			if name == "chat" || name == "completions" {
				s.met.latency.observe(time.Since(t0).Seconds())
			}
		}()
		var err *apiError
		switch {
		case !s.authorized(r):
			err = withStatus(http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "missing or wrong API key: send \"Authorization: Bearer KEY\"")
		case method != "" && r.Method != method:
			w.Header().Set("Allow", method)
			err = withStatus(http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "%s %s: use %s", r.Method, r.URL.Path, method)
		default:
			r.Body = http.MaxBytesReader(w, r.Body, s.o.MaxBody)
			err = h(w, r)
		}
		if err != nil {
			writeError(w, err)
		}
	}
}

func (s *Server) authorized(r *http.Request) bool {
	if s.o.APIKey == "" {
		return true
	}
	got := r.Header.Get("Authorization")
	want := "Bearer " + s.o.APIKey
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func writeError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	json.NewEncoder(w).Encode(map[string]*apiError{"error": e})
}

// readBody reads the (size-limited) body.
func readBody(r *http.Request, limit int64) ([]byte, *apiError) {
	b, err := io.ReadAll(r.Body)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, withStatus(http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", "the request body exceeds %d bytes (--max-body)", limit)
	case err != nil:
		return nil, badRequest("", "invalid_body", "reading the body: %v", err)
	}
	return b, nil
}

// adapterOf resolves the "model" field into a model.KVRow.Adapter.
func (s *Server) adapterOf(name string) (int, *apiError) {
	if name == s.o.Name {
		return model.NoAdapter, nil
	}
	if k, ok := s.loaded[name]; ok {
		return k, nil
	}
	return 0, withStatus(http.StatusNotFound, "invalid_request_error", "model_not_found",
		"the model %q does not exist (served: %s)", name, strings.Join(s.modelNames(), ", "))
}

func (s *Server) modelNames() []string {
	return append([]string{s.o.Name}, sortedKeys(s.o.Adapters)...)
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) *apiError {
	type entry struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
		Parent  string `json:"parent,omitempty"`
		MaxLen  int    `json:"max_model_len"`
	}
	list := []entry{}
	for _, n := range s.modelNames() {
		e := entry{ID: n, Object: "model", Created: s.t0.Unix(), OwnedBy: "argrl", MaxLen: s.maxLen}
		if n != s.o.Name {
			e.Parent = s.o.Name
		}
		list = append(list, e)
	}
	writeJSON(w, map[string]any{"object": "list", "data": list})
	return nil
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) *apiError {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	s.met.write(w)
	return nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// params builds the engine parameters of a request whose prompts are
// prompts: OpenAI's defaults (temperature 1, top_p 1, n 1), max_tokens
// checked against the context (default: the rest of it).
func (s *Server) params(sp *sampling, prompts []rollout.Prompt) (rollout.Params, *apiError) {
	longest := 0
	for i, p := range prompts {
		for t, id := range p.IDs {
			if int(id) >= s.m.Config.VocabSize {
				return rollout.Params{}, badRequest("prompt", "invalid_value", "prompt %d, token %d: id %d outside the vocabulary [0, %d)", i, t, id, s.m.Config.VocabSize)
			}
		}
		longest = max(longest, len(p.IDs))
	}
	if longest >= s.maxLen {
		return rollout.Params{}, badRequest("messages", "context_length_exceeded",
			"the prompt has %d tokens; the model's context is %d (model.max_len), which leaves no room for an answer", longest, s.maxLen)
	}
	maxNew := s.maxLen - longest
	if sp.MaxTokens != nil {
		if longest+*sp.MaxTokens > s.maxLen {
			return rollout.Params{}, badRequest("max_tokens", "context_length_exceeded",
				"the prompt has %d tokens and max_tokens is %d: %d in all, more than the model's context of %d (model.max_len)",
				longest, *sp.MaxTokens, longest+*sp.MaxTokens, s.maxLen)
		}
		maxNew = *sp.MaxTokens
	}
	stops, _ := sp.stops()
	p := rollout.Params{G: 1, Temperature: 1, TopK: sp.TopK, MaxNewTokens: maxNew, StopIDs: s.sched.stopIDs, Stop: stops}
	if sp.IgnoreEOS {
		p.StopIDs = nil
	}
	if sp.Temperature != nil {
		p.Temperature = float32(*sp.Temperature)
	}
	if sp.TopP != nil && *sp.TopP < 1 {
		p.TopP = float32(*sp.TopP)
	}
	if sp.N != nil {
		p.G = *sp.N
	}
	if sp.Seed != nil {
		p.Seed = uint64(*sp.Seed)
	}
	return p, nil
}

// promptID is the sample stream's id of a seeded request: the extension
// "sample_id", else "0" (with a seed, the same request gives the same
// samples; `train generate --seed S` on a prompt of that id gives them too).
func promptID(sp *sampling, i int) string {
	id := sp.SampleID
	if id == "" {
		id = "0"
	}
	if i > 0 {
		id = fmt.Sprintf("%s/%d", id, i)
	}
	return id
}

// prepare checks a generation request and builds its job; stream asks for
// its tokens as they are drawn.
func (s *Server) prepare(ctx context.Context, sp *sampling, adapter int, prompts []rollout.Prompt, topLP int, stream bool) (*job, *apiError) {
	p, err := s.params(sp, prompts)
	if err != nil {
		return nil, err
	}
	if p.G > s.o.Batch {
		return nil, badRequest("n", "invalid_value", "key \"n\": %d samples exceed the server's --batch of %d", p.G, s.o.Batch)
	}
	for i := range prompts {
		prompts[i].ID = promptID(sp, i)
	}
	j := &job{ctx: ctx, adapter: adapter, params: p, prompts: prompts, seeded: sp.Seed != nil, topLP: topLP}
	if stream {
		j.stream = newTokenStream()
	}
	return j, nil
}

// finish maps a job's outcome to an API error and counts its tokens.
func (s *Server) finish(ctx context.Context, res jobResult) *apiError {
	switch {
	case errors.Is(res.err, errClosed):
		return withStatus(http.StatusServiceUnavailable, "server_error", "shutting_down", "%v", res.err)
	case ctx.Err() != nil:
		return withStatus(499, "invalid_request_error", "client_closed_request", "the client closed the request")
	case errors.Is(res.err, rollout.ErrRequest):
		return badRequest("", "invalid_value", "%v", res.err)
	case res.err != nil:
		return withStatus(http.StatusInternalServerError, "server_error", "engine_error", "%v", res.err)
	}
	for _, g := range res.groups {
		s.met.promptTokens.Add(int64(len(g.PromptIDs)))
		for _, smp := range g.Samples {
			s.met.completionTokens.Add(int64(len(smp.IDs)))
		}
	}
	return nil
}
