// Package sim measures text similarity for R2IF's SMV reward (paper 002
// §3.1.3): "lexical", a character n-gram TF-IDF cosine, or "http", the
// cosine of embeddings from an OpenAI-compatible endpoint.
package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/argrl/argrl/reward/internal/apiclient"
)

// Similarity scores two texts in [0, 1] (1: same).
type Similarity interface {
	Sim(ctx context.Context, a, b string) (float64, error)
}

// Config selects the similarity.
type Config struct {
	// Name is "lexical" (default) or "http".
	Name string `yaml:"name"`
	// HTTP configures the embedding endpoint (POST URL/embeddings).
	HTTP apiclient.Config `yaml:"http"`
}

// New builds the similarity c names; corpus (may be nil) fits the lexical
// similarity's IDF.
func New(c Config, corpus []string) (Similarity, error) {
	switch c.Name {
	case "", "lexical":
		return NewLexical(corpus), nil
	case "http":
		return NewEmbedding(c.HTTP)
	}
	return nil, fmt.Errorf("sim: unknown similarity %q (valid: http, lexical)", c.Name)
}

// Lexical is the cosine of character n-gram (n = 3, 4 inside
// space-padded, lower-cased words) TF-IDF vectors. IDF is smoothed,
// idf(g) = ln((1+N)/(1+df(g))) + 1, over the fitted corpus; with no
// corpus the two compared texts are the corpus.
type Lexical struct {
	df map[string]int
	n  int
}

var _ Similarity = (*Lexical)(nil)

// NewLexical fits the IDF on corpus (nil: per pair).
func NewLexical(corpus []string) *Lexical {
	l := &Lexical{df: map[string]int{}}
	for _, d := range corpus {
		l.n++
		for g := range grams(d) {
			l.df[g]++
		}
	}
	return l
}

// grams counts the character n-grams of s.
func grams(s string) map[string]int {
	out := map[string]int{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		rs := []rune(" " + w + " ")
		for n := 3; n <= 4; n++ {
			for i := 0; i+n <= len(rs); i++ {
				out[string(rs[i:i+n])]++
			}
		}
	}
	return out
}

// Sim implements Similarity.
func (l *Lexical) Sim(_ context.Context, a, b string) (float64, error) {
	ga, gb := grams(a), grams(b)
	if len(ga) == 0 || len(gb) == 0 {
		return 0, nil
	}
	idf := func(g string) float64 {
		if l.n > 0 {
			return math.Log(float64(1+l.n)/float64(1+l.df[g])) + 1
		}
		df := 0
		if ga[g] > 0 {
			df++
		}
		if gb[g] > 0 {
			df++
		}
		return math.Log(3/float64(1+df)) + 1
	}
	var dot, na, nb float64
	for g, c := range ga {
		w := float64(c) * idf(g)
		na += w * w
		if d, ok := gb[g]; ok {
			dot += w * float64(d) * idf(g)
		}
	}
	for g, c := range gb {
		w := float64(c) * idf(g)
		nb += w * w
	}
	return clamp01(dot / math.Sqrt(na*nb)), nil
}

func clamp01(x float64) float64 {
	if math.IsNaN(x) || x < 0 {
		return 0
	}
	return math.Min(x, 1)
}

// Embedding is the cosine of two embeddings from POST URL/embeddings
// ({"model", "input": [a, b]}); negative cosines count 0.
type Embedding struct {
	c *apiclient.Client
}

var _ Similarity = (*Embedding)(nil)

// NewEmbedding validates c and returns the similarity.
func NewEmbedding(c apiclient.Config) (*Embedding, error) {
	cl, err := apiclient.New(c, "embed")
	if err != nil {
		return nil, fmt.Errorf("sim http: %w", err)
	}
	return &Embedding{c: cl}, nil
}

// Sim implements Similarity.
func (e *Embedding) Sim(ctx context.Context, a, b string) (float64, error) {
	if strings.TrimSpace(a) == "" || strings.TrimSpace(b) == "" {
		return 0, nil
	}
	req := map[string]any{"model": e.c.Model(), "input": []string{a, b}}
	var vecs [2][]float64
	err := e.c.Post(ctx, "embeddings", req, func(body []byte) error {
		var resp struct {
			Data []struct {
				Index     int       `json:"index"`
				Embedding []float64 `json:"embedding"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &resp); err != nil {
			return fmt.Errorf("decode response: %w", err)
		}
		if len(resp.Data) != 2 {
			return fmt.Errorf("want 2 embeddings, got %d", len(resp.Data))
		}
		sort.SliceStable(resp.Data, func(i, j int) bool { return resp.Data[i].Index < resp.Data[j].Index })
		vecs[0], vecs[1] = resp.Data[0].Embedding, resp.Data[1].Embedding
		if len(vecs[0]) == 0 || len(vecs[0]) != len(vecs[1]) {
			return fmt.Errorf("embeddings of lengths %d and %d", len(vecs[0]), len(vecs[1]))
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sim http: %w", err)
	}
	var dot, na, nb float64
	for i := range vecs[0] {
		dot += vecs[0][i] * vecs[1][i]
		na += vecs[0][i] * vecs[0][i]
		nb += vecs[1][i] * vecs[1][i]
	}
	if na == 0 || nb == 0 {
		return 0, nil
	}
	return clamp01(dot / math.Sqrt(na*nb)), nil
}
