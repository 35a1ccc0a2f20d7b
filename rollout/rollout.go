// Package rollout is argrl's generation engine: continuous batching over
// a paged KV cache (model.KVCache), with group sampling for GRPO (G
// samples per prompt), greedy decoding for evaluation, and the per-token
// log-probs PPO/GRPO take as π_old.
//
// Shapes (see kernels/backend.go for the legend):
//
//	cache          Pages × model.PageSize tokens, a page table per sequence;
//	               at most Options.Batch sequences at once
//	logits         [R, V] per step, R ≤ Batch sequences
//	lp, lse        [Batch] log-prob of each sampled token, log-sum-exp of its row
//
// How a call runs (engine.go):
//
//  1. Admission: while G cache sequences are free, no preempted sequence
//     waits and the free pages hold its prompt, the next prompt (in call
//     order) is admitted; its tokens are pending.
//  2. Steps: each step takes, within a token budget (Options.MaxTokens),
//     every decoding sequence's newest token, then chunks of the pending
//     tokens of the others (prompts, recomputations, the environment's
//     answers), all in one model.KVCache.Step. A prompt whose prefill is
//     done draws its G first tokens from its logits and shares its pages
//     with its G−1 other sequences (no copy; a shared partial page is
//     copied when first written). A sequence that stops frees its pages at
//     once, and the next prompt comes in (continuous batching).
//  3. When a step needs more pages than are free, the latest admitted
//     sequence is preempted: its pages are freed and its tokens become
//     pending again, recomputed when pages free up.
//  4. Groups are yielded in prompt order once all their samples finished.
//
// Serve (serving.go) runs the same steps open-ended for a server: requests
// arrive on a channel while others run, each with its own Params and
// adapter (model.KVRow.Adapter), are admitted first come first served,
// hand out their tokens as they are drawn, and leave the batch (pages
// freed) when they finish or their context is cancelled.
//
// Determinism. Sample s of a prompt with id I draws its token at step t
// with the uniform Uniform(seed, I, s, t), a hash, so the text depends only
// on (seed, id, sample index) and the logits. Every row of a step is
// computed alone: the CPU backend's SGEMM sums each output in an order set
// by K alone, attention, norms and sampling run per row, and each token's
// attention reads its keys in the same order whatever pages hold them. So
// on the CPU a sample's tokens and log-probs are bit-identical alone, in
// any batch, in any arrival order, under any token budget and after any
// preemption (TestScheduleIndependence, TestEpisodesScheduleIndependence).
// OpenBLAS (-tags openblas) rounds a row differently with its position in
// the matrix (measured: rows 0–5 and 6–11 of every 12 differ in the last
// bits), so across batch compositions log-probs agree to ~1e-6 and a
// sampled token can differ when a uniform falls within that distance of a
// boundary of the sampling distribution (the test measures how often).
//
// With any build a call is reproducible: the schedule is a function of the
// prompts, the parameters and Options, so the same call gives the same
// bytes (what a bit-identical resume needs).
//
// Log-probs. Each token's log-prob is log_softmax(logits)[token] on the
// unmodified logits at temperature 1 (Backend.LogProbs), whatever the
// sampling temperature, top-p or top-k: the quantity `train score` and the
// training forward compute, so the first PPO/GRPO ratio is 1.
//
// Where this departs from vLLM/TRL defaults, on purpose:
//   - stop tokens (EOS, end of turn) are kept in the response ids with their
//     log-probs (the policy must learn to stop), and skipped in the text;
//   - a stop string ends the sample after the token that completes it, and
//     the text keeps it (text = decode(ids), so offsets and ids agree).
package rollout

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/model/tokenizer"
)

// Prompt is one input sequence.
type Prompt struct {
	// ID keys the sample streams (with the seed and the sample index); the
	// dataset record id. An empty ID is replaced by the prompt's index in
	// the call, which then depends on the call's composition.
	ID  string
	IDs []int32 // prompt token ids (chat template applied), non-empty
}

// Params are the sampling parameters of one call (docs/contracts.md §5).
type Params struct {
	G            int     // samples per prompt, ≥ 1 (PPO and eval: 1)
	Temperature  float32 // 0: greedy (argmax, lowest id on ties)
	TopP         float32 // nucleus mass in (0, 1); 0 or 1: off
	TopK         int     // keep the K most likely tokens; 0: off
	MaxNewTokens int     // new tokens per sample (stop token included); 0 gives empty responses
	StopIDs      []int32 // ids that end a sample (EOS, end of turn): see StopIDs
	Stop         []string
	// Seed selects the sample streams. A trainer changes it every step
	// (e.g. a hash of run seed and step), or the same prompt would be
	// answered with the same samples each time it comes back.
	Seed uint64
	// MaxTurns caps the assistant turns of a multi-turn rollout
	// (Engine.Episodes; rollout.max_turns); MaxNewTokens then applies to
	// each turn. 0 or 1: one turn. Generate, Groups and Greedy refuse more.
	MaxTurns int
}

// Finish says why a sample ended.
type Finish string

const (
	FinishStop    Finish = "stop"    // a stop id or a stop string
	FinishLength  Finish = "length"  // MaxNewTokens reached
	FinishContext Finish = "context" // prompt + response fill the context (MaxLen)
	// Multi-turn episodes (Engine.Episodes) also end:
	FinishDone  Finish = "done"      // the environment ended the episode (an answer without calls)
	FinishTurns Finish = "max_turns" // MaxTurns assistant turns were taken
)

// Sample is one generated response.
//
// A multi-turn sample (Engine.Episodes) is the whole episode after the
// prompt: every assistant turn's sampled ids, each followed by the ids the
// environment's answer added (the template's turn glue and the messages),
// exactly as the model saw them; Mask tells them apart (multiturn.go).
type Sample struct {
	Index int     // sample index within its group, 0..G-1
	IDs   []int32 // response token ids (stop token included)
	// LogProbs[t] = log π(IDs[t] | prompt, IDs[:t]) at temperature 1;
	// multi-turn: 0 on the ids the model did not sample.
	LogProbs []float32
	// Text is decode(IDs), special tokens skipped ("" without a tokenizer);
	// multi-turn: the decoded turns and answers, concatenated.
	Text    string
	Offsets [][2]int // byte range of Text produced by each id (nil without a tokenizer)
	Finish  Finish
	// Multi-turn only (nil otherwise): Mask[t] is true on the ids the model
	// sampled (the assistant turns, trained) and false on the ids the
	// environment and the template added (masked out of the loss); the
	// turns; the environment's final state.
	Mask  []bool
	Turns []Turn
	State json.RawMessage
}

// Group is the G samples of one prompt.
type Group struct {
	Index     int     // the prompt's position in the call
	ID        string  // Prompt.ID (or the index, see Prompt)
	PromptIDs []int32 // the prompt
	Samples   []Sample
	// Elapsed runs from the prompt's admission (prefill) to its last
	// sample's end; NewTokens counts the group's generated tokens.
	Elapsed   time.Duration
	NewTokens int
}

// TokensPerSec is the group's generation rate (it shares the engine with
// the other prompts decoded meanwhile; Stats has the engine's rate).
func (g *Group) TokensPerSec() float64 {
	if g.Elapsed <= 0 {
		return 0
	}
	return float64(g.NewTokens) / g.Elapsed.Seconds()
}

// Stats accumulate over an engine's calls.
type Stats struct {
	Prompts, Samples         int
	PromptTokens, NewTokens  int
	DecodeSteps              int           // engine steps (model.KVCache.Step calls)
	MaxRows                  int           // most sequences in one step (rows of a Step, decoding and prefilling)
	Preemptions              int           // sequences whose pages were taken back, to be recomputed
	Prefill, Decode, Elapsed time.Duration // steps with prefill chunks, steps of decode rows only, whole calls
}

// TokensPerSec is new tokens per second of call time.
func (s Stats) TokensPerSec() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.NewTokens) / s.Elapsed.Seconds()
}

// Options configure an Engine.
type Options struct {
	// Batch is the most sequences running at once (cache sequences, and
	// rows of a step). A group's G samples must fit (G ≤ Batch). 0 means
	// 64. How many actually run is bounded by the KV pages (Pages).
	Batch int
	// Pages is the KV cache's pages of model.PageSize tokens. 0: room for
	// Batch sequences at the call's full length (prompt + response), so
	// nothing is ever preempted. Fewer pages hold more sequences than they
	// could at full length while most responses are short; when they run
	// out the latest admitted sequence is preempted and recomputed later,
	// with identical results.
	Pages int
	// MaxTokens is a step's token budget: the running sequences' next
	// tokens, then chunks of the pending prompts (and, multi-turn, the
	// environments' answers). 0 means max(Batch, 256).
	MaxTokens int
	// DecodeRows is ignored. It padded decode steps with dummy rows so that
	// every matmul had the same shape; every row of a step is now computed
	// alone whatever its neighbours (see the package doc), so padding
	// would change nothing. Kept so that existing callers compile.
	DecodeRows int
	// MaxLen caps prompt + response tokens per sequence (0: the model's
	// MaxLen). The cache is sized per call to the longest prompt plus
	// MaxNewTokens, within this cap, and reused by later calls that fit.
	MaxLen int
	// MergeLoRA merges the adapters into the weights for each call and
	// unmerges them after, instead of applying them unmerged. Unmerging
	// restores W only up to float32 rounding (W + Δ − Δ), so the frozen
	// base drifts by an ulp per call; it needs F32 weights. Off by default:
	// unmerged r=32 adapters cost ~7% of decode throughput on the small
	// bench model at batch 64 and merging wins back ~3% (431 → 444 tokens/s,
	// 462 without LoRA; bench/rollout -lora 32 [-merge]), not worth the drift.
	MergeLoRA bool
	// Tokenizer decodes responses to text and offsets and checks stop
	// strings; nil leaves Text empty and refuses stop strings.
	Tokenizer *tokenizer.Tokenizer
}

// Engine generates with one model. It is not safe for concurrent use, and
// it uses the model's current adapter state (SetAdapters) at every call.
type Engine struct {
	m     *model.Model
	be    kernels.Backend
	tok   *tokenizer.Tokenizer
	o     Options
	vocab int

	// cache is nil until the first call, regrown between calls only; its
	// Steps do not wait for the device: each step's fetch of its draws
	// does (draws.go)
	cache  *model.KVCache
	draws  drawer
	slots  []int     // [S] per decode row
	toks   []int32   // [S]
	u      []float32 // [S]
	ids    []int32   // a step's draws (at least S)
	lpHost []float32 // their log-probs
	stats  Stats
}

// New returns an engine over m.
func New(m *model.Model, o Options) (*Engine, error) {
	if m == nil {
		return nil, fmt.Errorf("rollout: New: nil model")
	}
	if o.Batch < 0 || o.MaxLen < 0 || o.DecodeRows < 0 || o.Pages < 0 || o.MaxTokens < 0 {
		return nil, fmt.Errorf("rollout: New: negative Batch %d, MaxLen %d, DecodeRows %d, Pages %d or MaxTokens %d",
			o.Batch, o.MaxLen, o.DecodeRows, o.Pages, o.MaxTokens)
	}
	if o.Batch == 0 {
		o.Batch = 64
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = max(o.Batch, 256)
	}
	if o.MaxLen == 0 || o.MaxLen > m.MaxLen() {
		o.MaxLen = m.MaxLen()
	}
	V := m.Config.VocabSize
	if o.Tokenizer != nil && o.Tokenizer.VocabSize() > V {
		return nil, fmt.Errorf("rollout: New: tokenizer %s has %d tokens, more than the model's vocab_size %d",
			o.Tokenizer.File(), o.Tokenizer.VocabSize(), V)
	}
	S := o.Batch
	e := &Engine{m: m, be: m.Backend(), tok: o.Tokenizer, o: o, vocab: V,
		slots: make([]int, S), toks: make([]int32, S), ids: make([]int32, S),
		u: make([]float32, S), lpHost: make([]float32, S), draws: newDrawer(m.Backend())}
	if err := e.be.Sync(); err != nil {
		e.Close()
		return nil, fmt.Errorf("rollout: New: %w", err)
	}
	return e, nil
}

// Close frees the engine's device memory (not the model).
func (e *Engine) Close() {
	if e.cache != nil {
		e.cache.Close()
		e.cache = nil
	}
	e.draws.close()
}

// Stats returns the totals of every call so far.
func (e *Engine) Stats() Stats { return e.stats }

// Model is the engine's model.
func (e *Engine) Model() *model.Model { return e.m }

// StopIDs returns the ids that end generation: the tokenizer's (eos_token,
// generation_config.json's eos_token_id, the family's end-of-turn tokens)
// and config.json's eos_token_id, ascending, without duplicates. tok may be
// nil (models without a tokenizer, such as the test fixtures).
func StopIDs(tok *tokenizer.Tokenizer, c *model.Config) []int32 {
	seen := map[int32]bool{}
	var out []int32
	add := func(id int32) {
		if id >= 0 && int(id) < c.VocabSize && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	if tok != nil {
		for _, id := range tok.StopIDs() {
			add(id)
		}
	}
	for _, id := range c.EOSTokenIDs {
		add(int32(id))
	}
	for i := 1; i < len(out); i++ { // insertion sort: a handful of ids
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
