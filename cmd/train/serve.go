package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/serve"
)

// train serve --model DIR [--adapter NAME=DIR ...] [--listen 127.0.0.1:8000]
//
// The model behind an OpenAI-compatible endpoint (package serve,
// docs/serve.md).
func init() { root.AddCommand(newServeCmd()) }

func newServeCmd() *cobra.Command {
	var g genFlags
	var modelDir, listen, name, keyEnv, formatName string
	var adapters []string
	var maxBody int64
	var drain time.Duration
	var seed uint64
	c := &cobra.Command{
		Use:   "serve --model DIR [--adapter NAME=DIR ...] [--listen 127.0.0.1:8000] [--api-key-env NAME]",
		Short: "serve the model (and its LoRA adapters) behind an OpenAI-compatible HTTP endpoint",
		Long: `Serve POST /v1/chat/completions, POST /v1/completions, GET /v1/models,
GET /health and GET /metrics (Prometheus) with the rollout engine: the same
numerics as "train generate" (at temperature 0 or with a seed, the same
tokens and log-probs). The "model" field picks the base model (--name) or an
adapter (--adapter NAME=DIR, repeatable), all loaded once and served side
by side in one batch (multi-LoRA). Chat messages are rendered with the model's chat
template and --format; the calls the model writes come back as tool_calls.
Extensions (docs/serve.md): "return_token_ids" (prompt and completion token
ids), "sample_id" (the sample stream's id), "top_k".

It binds 127.0.0.1 unless --listen says otherwise. With --api-key-env NAME
every request needs "Authorization: Bearer $NAME" (the key is never printed).
SIGTERM or SIGINT stops accepting, lets the requests in flight finish (at
most --drain), then exits.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if modelDir == "" {
				return fmt.Errorf("serve: --model is required")
			}
			if _, err := format.Get(formatName, format.Options{}); err != nil {
				return fmt.Errorf("serve: --format: %w", err)
			}
			o := serve.Options{Name: name, Adapters: map[string]string{}, Format: formatName, Template: g.template,
				MaxBody: maxBody, Seed: seed, Batch: g.batch}
			for _, a := range adapters {
				n, dir, ok := strings.Cut(a, "=")
				if !ok || n == "" || dir == "" {
					return fmt.Errorf("serve: --adapter %q: want NAME=DIR", a)
				}
				if _, dup := o.Adapters[n]; dup {
					return fmt.Errorf("serve: --adapter %s given twice", n)
				}
				o.Adapters[n] = dir
			}
			if keyEnv != "" {
				if o.APIKey = os.Getenv(keyEnv); o.APIKey == "" {
					return fmt.Errorf("serve: --api-key-env %s: the variable is unset or empty", keyEnv)
				}
			}
			if g.batch < 1 || maxBody < 1 || drain < 0 || g.pages < 0 {
				return fmt.Errorf("serve: --batch %d, --max-body %d, --drain %s and --pages %d: want ≥ 1, ≥ 1, ≥ 0 and ≥ 0", g.batch, maxBody, drain, g.pages)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("serve: --listen %s: %w", listen, err)
			}
			defer ln.Close()
			log := cmd.ErrOrStderr()
			s, err := openGen(modelDir, "", &g, true, log)
			if err != nil {
				return fmt.Errorf("serve: %w", err)
			}
			defer s.close()
			srv, err := serve.New(s.m, s.eng, s.tok, o)
			if err != nil {
				return fmt.Errorf("serve: %w", err)
			}
			names := []string{o.Name}
			for n := range o.Adapters {
				names = append(names, n)
			}
			hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 30 * time.Second}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			errc := make(chan error, 1)
			go func() { errc <- hs.Serve(ln) }()
			fmt.Fprintf(log, "serve: listening on http://%s (models: %s; context %d tokens, format %s)\n",
				ln.Addr(), strings.Join(names, ", "), s.m.MaxLen(), formatName)
			select {
			case err := <-errc:
				srv.Close()
				return fmt.Errorf("serve: %w", err)
			case <-ctx.Done():
			}
			fmt.Fprintf(log, "serve: signal: draining the requests in flight (at most %s)\n", drain)
			dctx, cancel := context.WithTimeout(context.Background(), drain)
			defer cancel()
			switch serr := hs.Shutdown(dctx); {
			case errors.Is(serr, context.DeadlineExceeded):
				fmt.Fprintf(log, "serve: drain timed out after %s; closing the remaining connections\n", drain)
				hs.Close()
			case serr != nil:
				fmt.Fprintf(log, "serve: warning: shutting down: %v\n", serr)
			}
			srv.Close()
			fmt.Fprintln(log, "serve: stopped")
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&modelDir, "model", "", "Hugging Face model directory (required)")
	f.StringArrayVar(&adapters, "adapter", nil, "NAME=DIR: serve the PEFT adapter in DIR as model NAME (repeatable)")
	f.StringVar(&listen, "listen", "127.0.0.1:8000", "address to listen on (host:port; port 0 picks a free one)")
	f.StringVar(&name, "name", "base", "the base model's name in the \"model\" field")
	f.StringVar(&keyEnv, "api-key-env", "", "require \"Authorization: Bearer KEY\", KEY read from this environment variable")
	f.StringVar(&formatName, "format", "tool_call", "output format the model writes calls in: "+strings.Join(format.Names(), ", "))
	f.Int64Var(&maxBody, "max-body", 4<<20, "largest request body in bytes")
	f.DurationVar(&drain, "drain", 30*time.Second, "on SIGTERM, how long requests in flight may take to finish")
	f.Uint64Var(&seed, "seed", 0, "seed of the requests without one (0: random)")
	fl := c.Flags()
	fl.StringVar(&g.template, "template", "", "chat template (\"\" picks it from config.json's model_type)")
	fl.StringVar(&g.tokenizer, "tokenizer", "", "tokenizer.json or a directory holding one (default: the model directory)")
	fl.StringVar(&g.backend, "backend", "", "compute backend (\"\" = auto: cuda when the binary has it and a GPU answers, else cpu)")
	fl.IntVar(&g.batch, "batch", 64, "sequences decoded at once (KV-cache slots)")
	fl.IntVar(&g.maxLen, "max-len", 0, "longest prompt+response in tokens (0: the model's context)")
	fl.IntVar(&g.pages, "pages", 0, "KV-cache pages of 16 tokens (0: --batch sequences of min(context, 512) tokens; when they run out the latest request is preempted and recomputed)")
	addComputeFlag(c, &g.compute)
	return c
}
