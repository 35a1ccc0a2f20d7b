package rl

// R2IF's CER student (papers 002/003, docs/contracts.md §4): a reward.Student that
// runs the rollout engine on a configured checkpoint (reward.student.path,
// optionally with reward.student.adapter, with its own tokenizer and chat
// template: paper 002 uses Llama-3.2-3B for Qwen2.5 policies), or on the
// policy's own frozen base with LoRA switched off when the path is empty.
//
// Complete(rec, R, k) renders rec's prompt with the run's chat template,
// appends "<reason>R</reason>" when R is not empty (the student continues
// after the policy's reasoning; with R empty it reasons itself), samples k
// continuations with the rollout's temperature, top-p and max_new_tokens,
// and returns each as a full response ("<reason>R</reason>" + continuation)
// for the scorer.
//
// The sample streams are keyed by the record id and a hash of R under a
// seed fixed for the run, so the same (record, reasoning) always gets the
// same continuations: the reward of a rollout does not depend on what was
// scored before it (R2IF caches v_base per record in memory), and a resumed
// run scores exactly as an uninterrupted one.

import (
	"context"
	"fmt"
	"hash/fnv"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/model/chat"
	"github.com/argrl/argrl/model/tokenizer"
	"github.com/argrl/argrl/reward"
	"github.com/argrl/argrl/rollout"
	"github.com/argrl/argrl/trainer/config"
)

// Policy is the run's policy as the student needs it: the prompt rendering
// (tokenizer, chat template, output format) and, for a student on the
// policy's base, the model and its rollout engine.
type Policy struct {
	Model     *model.Model
	Engine    *rollout.Engine
	Tokenizer *tokenizer.Tokenizer
	Template  chat.Template
	Format    format.Format
}

// Student is R2IF's CER student (see the file header).
type Student struct {
	policy Policy
	eng    *rollout.Engine
	own    *model.Model // nil when the student is the policy's base
	tok    *tokenizer.Tokenizer
	tmpl   chat.Template
	params rollout.Params
}

var _ reward.Student = (*Student)(nil)

// NewStudent opens the student the config names (the policy's base, with
// LoRA off, when reward.student.path is empty).
func NewStudent(cfg config.Config, p Policy) (*Student, error) {
	st := newStudent(cfg, p)
	if cfg.Reward.Student.Path == "" {
		if cfg.Reward.Student.Adapter != "" {
			return nil, fmt.Errorf("key \"reward.student.adapter\" needs reward.student.path")
		}
		if !p.Model.HasAdapters() {
			return nil, fmt.Errorf("key \"reward.student.path\" is empty, which means the frozen base with LoRA off, but lora.enabled is false: give the student's model directory")
		}
		st.params.StopIDs = rollout.StopIDs(p.Tokenizer, p.Model.Config)
		return st, nil
	}
	if err := st.openOwn(cfg, p.Model.Backend()); err != nil {
		return nil, err
	}
	return st, nil
}

// OpenStudent opens the student of reward.student (its path is required)
// on backend be outside a training run (`train reward`): it completes
// responses in format f, sampling as cfg's rollout keys say.
func OpenStudent(cfg config.Config, be kernels.Backend, f format.Format) (*Student, error) {
	if cfg.Reward.Student.Path == "" {
		return nil, fmt.Errorf("key \"reward.student.path\": give the student's model directory")
	}
	st := newStudent(cfg, Policy{Format: f})
	if err := st.openOwn(cfg, be); err != nil {
		return nil, err
	}
	return st, nil
}

func newStudent(cfg config.Config, p Policy) *Student {
	return &Student{policy: p, eng: p.Engine, tok: p.Tokenizer, tmpl: p.Template, params: rollout.Params{
		Temperature: float32(cfg.Rollout.Temperature), TopP: float32(cfg.Rollout.TopP), TopK: cfg.Rollout.TopK,
		MaxNewTokens: cfg.Rollout.MaxNewTokens, Stop: cfg.Rollout.Stop,
		Seed: StreamSeed(cfg.Run.Seed, "r2if-student", 0)}}
}

// openOwn loads the student's own checkpoint (reward.student.path, its
// adapter, tokenizer and chat template) and its rollout engine.
func (st *Student) openOwn(cfg config.Config, be kernels.Backend) error {
	sc := cfg.Reward.Student
	tokPath := sc.Tokenizer
	if tokPath == "" {
		tokPath = sc.Path
	}
	tok, err := tokenizer.Load(tokPath)
	if err != nil {
		return fmt.Errorf("key \"reward.student.tokenizer\" (default: reward.student.path): %w", err)
	}
	m, err := model.Open(sc.Path, be, model.Options{Adapter: sc.Adapter, MaxLen: cfg.Model.MaxLen, Compute: cfg.Model.Compute})
	if err != nil {
		return fmt.Errorf("key \"reward.student.path\": %w", err)
	}
	tmplName := sc.Template
	if tmplName == "" {
		tmplName = m.Config.ModelType
	}
	if st.tmpl, err = chat.New(tmplName, chat.Options{System: cfg.Model.System}); err != nil {
		m.Close()
		return fmt.Errorf("key \"reward.student.template\": %w", err)
	}
	if m.Config.VocabSize < tok.VocabSize() {
		m.Close()
		return fmt.Errorf("key \"reward.student.path\": %s has vocab_size %d, fewer than its tokenizer's %d", sc.Path, m.Config.VocabSize, tok.VocabSize())
	}
	eng, err := rollout.New(m, rollout.Options{MaxLen: cfg.Model.MaxLen, Tokenizer: tok})
	if err != nil {
		m.Close()
		return err
	}
	st.own, st.eng, st.tok = m, eng, tok
	st.params.StopIDs = rollout.StopIDs(tok, m.Config)
	return nil
}

// Complete implements reward.Student.
func (st *Student) Complete(ctx context.Context, rec *data.Record, reasoning string, k int) (_ []string, err error) {
	r, err := st.tmpl.Render(*rec, st.policy.Format, false)
	if err != nil {
		return nil, err
	}
	ids := r.Encode(st.tok).IDs
	prefix := ""
	if reasoning != "" {
		prefix = "<reason>" + reasoning + "</reason>"
		more, _ := st.tok.Encode(prefix, false)
		ids = append(ids, more...)
	}
	h := fnv.New64a()
	h.Write([]byte(reasoning))
	p := st.params
	p.G = k
	if st.own == nil {
		m := st.policy.Model
		if err := m.SetAdapters(false); err != nil {
			return nil, err
		}
		defer func() {
			if aerr := m.SetAdapters(true); aerr != nil && err == nil {
				err = fmt.Errorf("student: adapters back on: %w", aerr)
			}
		}()
	}
	gs, err := st.eng.Generate(ctx, []rollout.Prompt{{ID: fmt.Sprintf("%s#%016x", rec.ID, h.Sum64()), IDs: ids}}, p)
	if err != nil {
		return nil, fmt.Errorf("student: %w", err)
	}
	out := make([]string, len(gs[0].Samples))
	for i, s := range gs[0].Samples {
		out[i] = prefix + s.Text
	}
	return out, nil
}

// Close frees a student model of its own.
func (st *Student) Close() {
	if st != nil && st.own != nil {
		st.eng.Close()
		st.own.Close()
	}
}

// StreamSeed derives a sampling seed from the run seed, a purpose and a
// step (the rollout of each step, the student's continuations).
func StreamSeed(seed int64, what string, step int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%d", seed, what, step)
	return h.Sum64()
}
