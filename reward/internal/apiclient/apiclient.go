// Package apiclient posts JSON to an OpenAI-compatible endpoint with a
// per-request timeout, retries with exponential backoff, and an on-disk
// cache keyed by the request (URL and body), shared by the http language
// judge and the embedding similarity.
package apiclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/argrl/argrl/internal/atomicfile"
	"github.com/argrl/argrl/internal/redact"
)

// Config describes an endpoint. Zero values take the defaults in brackets.
type Config struct {
	// URL is the API base, e.g. http://localhost:8000/v1 (required).
	URL string `yaml:"url"`
	// Model is the model name sent with every request (required).
	Model string `yaml:"model"`
	// APIKeyEnv names the environment variable holding a bearer token;
	// unset or empty sends no Authorization header [OPENAI_API_KEY].
	APIKeyEnv string `yaml:"api_key_env"`
	// TimeoutS bounds each attempt, in seconds [30].
	TimeoutS float64 `yaml:"timeout_s"`
	// Retries is the number of further attempts after a failed one [3].
	Retries *int `yaml:"retries"`
	// BackoffS is the first wait before a retry; it doubles each time [1].
	BackoffS float64 `yaml:"backoff_s"`
	// CacheDir holds one file per distinct request; "off" disables the
	// cache [$XDG_CACHE_HOME/argrl/<kind>].
	CacheDir string `yaml:"cache_dir"`
}

// Client is a configured endpoint.
type Client struct {
	url, model, key string
	timeout         time.Duration
	retries         int
	backoff         time.Duration
	cacheDir        string // "" when disabled
	http            *http.Client
	sleep           func(context.Context, time.Duration) error
}

// New validates c and returns a client; kind names the default cache
// subfolder ("judge", "embed").
func New(c Config, kind string) (*Client, error) {
	if c.URL == "" {
		return nil, fmt.Errorf("%s: url is required", kind)
	}
	if c.Model == "" {
		return nil, fmt.Errorf("%s: model is required", kind)
	}
	cl := &Client{url: strings.TrimRight(c.URL, "/"), model: c.Model, http: &http.Client{}, sleep: sleepCtx}
	env := c.APIKeyEnv
	if env == "" {
		env = "OPENAI_API_KEY"
	}
	cl.key = os.Getenv(env)
	cl.timeout = 30 * time.Second
	if c.TimeoutS > 0 {
		cl.timeout = time.Duration(c.TimeoutS * float64(time.Second))
	}
	cl.retries = 3
	if c.Retries != nil {
		if *c.Retries < 0 {
			return nil, fmt.Errorf("%s: retries must be >= 0, got %d", kind, *c.Retries)
		}
		cl.retries = *c.Retries
	}
	cl.backoff = time.Second
	if c.BackoffS > 0 {
		cl.backoff = time.Duration(c.BackoffS * float64(time.Second))
	}
	switch c.CacheDir {
	case "off":
	case "":
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		cl.cacheDir = filepath.Join(base, "argrl", kind)
	default:
		cl.cacheDir = c.CacheDir
	}
	return cl, nil
}

// Model is the configured model name.
func (c *Client) Model() string { return c.model }

// Post sends body as JSON to URL/path and hands the response body to
// parse. A response that parse accepts is cached; a cached response is
// returned without a request. Network errors, 429 and 5xx are retried.
func (c *Client) Post(ctx context.Context, path string, body any, parse func([]byte) error) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	url := c.url + "/" + strings.TrimLeft(path, "/")
	sum := sha256.Sum256([]byte(url + "\n" + string(raw)))
	key := hex.EncodeToString(sum[:])
	if b, ok := c.cached(key); ok {
		if err := parse(b); err == nil {
			return nil
		}
	}
	shown := redact.URL(url) // errors never show a password
	var last error
	for attempt := 0; attempt <= c.retries; attempt++ {
		if attempt > 0 {
			if err := c.sleep(ctx, c.backoff<<(attempt-1)); err != nil {
				return redact.Error(fmt.Errorf("%s: %w (last error: %v)", shown, err, last))
			}
		}
		b, retry, err := c.once(ctx, url, raw)
		if err == nil {
			if err := parse(b); err != nil {
				return fmt.Errorf("%s: %w", shown, err)
			}
			c.store(key, b)
			return nil
		}
		last = err
		if !retry {
			break
		}
	}
	return redact.Error(fmt.Errorf("%s: %w", shown, last))
}

// once is one attempt; retry says whether a failure is worth retrying.
func (c *Client) once(ctx context.Context, url string, raw []byte) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// A cancelled parent context is final; a timed-out attempt is not.
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, false, err
		}
		return nil, true, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, true, fmt.Errorf("read response: %w", err)
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		return nil, true, fmt.Errorf("status %d: %s", resp.StatusCode, snippet(b))
	}
	if resp.StatusCode != http.StatusOK {
		return nil, false, fmt.Errorf("status %d: %s", resp.StatusCode, snippet(b))
	}
	return b, false, nil
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func (c *Client) path(key string) string { return filepath.Join(c.cacheDir, key[:2], key+".json") }

func (c *Client) cached(key string) ([]byte, bool) {
	if c.cacheDir == "" {
		return nil, false
	}
	b, err := os.ReadFile(c.path(key))
	return b, err == nil
}

// store writes the cache entry atomically; a cache that cannot be written
// only costs a repeated request, so errors are dropped.
func (c *Client) store(key string, b []byte) {
	if c.cacheDir == "" {
		return
	}
	p := c.path(key)
	if err := os.MkdirAll(filepath.Dir(p), atomicfile.DirMode); err != nil {
		return
	}
	tmp, err := atomicfile.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
