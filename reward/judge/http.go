package judge

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/argrl/argrl/reward/internal/apiclient"
	"github.com/argrl/argrl/reward/internal/norm"
)

// HTTPConfig configures the http judge: an OpenAI-compatible chat
// endpoint (POST URL/chat/completions) given the rubric of paper 000,
// Appendix J.
type HTTPConfig struct {
	apiclient.Config `yaml:",inline"`
	// Scale is the rubric the model answers on: "rm3" (2.5/2.0/1.0,
	// default) or "rm2" (2.0/1.5/1.0).
	Scale string `yaml:"scale"`
}

// HTTP asks a chat model for the score. Exact or normalized matches are
// decided locally without a request.
type HTTP struct {
	c   *apiclient.Client
	rm2 bool
}

var _ Judge = (*HTTP)(nil)

// NewHTTP validates c and returns the judge.
func NewHTTP(c HTTPConfig) (*HTTP, error) {
	switch c.Scale {
	case "", "rm3", "rm2":
	default:
		return nil, fmt.Errorf("judge http: scale %q is not one of rm3, rm2", c.Scale)
	}
	cl, err := apiclient.New(c.Config, "judge")
	if err != nil {
		return nil, fmt.Errorf("judge http: %w", err)
	}
	return &HTTP{c: cl, rm2: c.Scale == "rm2"}, nil
}

// rubric is the system prompt: the task and scoring rubric of paper 000,
// Appendix J ("Argument-Level Language Evaluation Prompt").
const rubric = `You are evaluating the language consistency of API argument values.
You are given the user utterance (with its language), the ground-truth argument value and the model-generated argument value.
Task: determine whether the generated value matches the expected language.
Scoring rubric:
For RM-2: 2.0 = correct language; 1.5 = partially correct / minor variation; 1.0 = language mismatch.
For RM-3: 2.5 = exact language match; 2.0 = correct language with minor lexical variation; 1.0 = incorrect language.
Do NOT evaluate semantic correctness. Evaluate language consistency only.
Return only the numerical score.`

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	Temperature float64       `json:"temperature"`
	MaxTokens   int           `json:"max_tokens"`
}

var scoreRE = regexp.MustCompile(`[0-9]+(?:\.[0-9]+)?`)

// Judge implements Judge.
func (h *HTTP) Judge(ctx context.Context, q Query) (Verdict, error) {
	if norm.Equal(q.Value, q.Gold) {
		return Exact, nil
	}
	for _, a := range q.Accept {
		if a != "" && norm.Equal(q.Value, a) {
			return Exact, nil
		}
	}
	scale := "RM-3"
	if h.rm2 {
		scale = "RM-2"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "User utterance (language: %s): %s\n", q.Lang, q.Utterance)
	if q.Arg != "" {
		fmt.Fprintf(&b, "Argument: %s\n", q.Arg)
	}
	fmt.Fprintf(&b, "Ground-truth argument value: %s\n", strconv.Quote(q.Gold))
	fmt.Fprintf(&b, "Model-generated argument value: %s\n", strconv.Quote(q.Value))
	fmt.Fprintf(&b, "Answer with the %s score only.", scale)
	req := chatRequest{
		Model:       h.c.Model(),
		Messages:    []chatMessage{{Role: "system", Content: rubric}, {Role: "user", Content: b.String()}},
		Temperature: 0,
		MaxTokens:   8,
	}
	var v Verdict
	err := h.c.Post(ctx, "chat/completions", req, func(body []byte) error {
		var resp struct {
			Choices []struct {
				Message chatMessage `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(body, &resp); err != nil {
			return fmt.Errorf("decode response: %w", err)
		}
		if len(resp.Choices) == 0 {
			return fmt.Errorf("response has no choices")
		}
		text := resp.Choices[0].Message.Content
		m := scoreRE.FindString(text)
		if m == "" {
			return fmt.Errorf("no score in answer %q", text)
		}
		f, err := strconv.ParseFloat(m, 64)
		if err != nil {
			return fmt.Errorf("score %q: %w", m, err)
		}
		v, err = FromScore(f, h.rm2)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("judge http: %w", err)
	}
	return v, nil
}
