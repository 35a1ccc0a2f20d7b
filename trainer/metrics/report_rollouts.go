package metrics

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// rolloutView is the report's rollouts section: the sample of one step.
type rolloutView struct {
	Run      string             `json:"run"`
	Step     int                `json:"step"`
	EvalStep int                `json:"eval_step"` // the run's last evaluated step (0: none)
	Beta     float64            `json:"beta"`
	Groups   []rolloutGroupView `json:"groups"`
}

type rolloutGroupView struct {
	Group    int                 `json:"group"`
	PromptID string              `json:"prompt_id"`
	Lang     string              `json:"lang"`
	Prompt   string              `json:"prompt"`
	Gold     string              `json:"gold"`
	Samples  []rolloutSampleView `json:"samples"`
}

type rolloutSampleView struct {
	Index    int                `json:"index"`
	Reward   float64            `json:"reward"`
	Gate     string             `json:"gate"`
	Parts    map[string]float64 `json:"parts"`
	Levels   map[string]bool    `json:"levels"`
	Adv      float64            `json:"adv"`
	Finish   string             `json:"finish"`
	Tokens   int                `json:"tokens"`
	Weighted int                `json:"weighted"` // tokens with w_t ≠ 1
	Values   []string           `json:"values"`   // the argument values' text
	// Segs cut the text where a token, a value span or a weight changes:
	// [text, token index (-1: no token), w_t, 1 inside a value span else 0].
	Segs [][4]any `json:"segs"`
}

// loadRolloutView picks the first run's rollouts file: the one of its
// last evaluated step, else the newest before it, else the newest; nil
// when the run has none.
func loadRolloutView(dir string, r reportRun) (*rolloutView, error) {
	steps, err := RolloutSteps(dir)
	if err != nil || len(steps) == 0 {
		return nil, err
	}
	evalStep := 0
	if n := len(r.Eval.Steps); n > 0 {
		evalStep = r.Eval.Steps[n-1]
	}
	pick := steps[len(steps)-1]
	if evalStep > 0 {
		for _, s := range steps {
			if s <= evalStep {
				pick = s
			}
		}
	}
	groups, err := ReadRollouts(RolloutsPath(dir, pick))
	if err != nil {
		return nil, err
	}
	v := &rolloutView{Run: r.Name, Step: pick, EvalStep: evalStep, Beta: r.Beta}
	for _, g := range groups[:min(len(groups), MaxRolloutGroups)] {
		gv := rolloutGroupView{Group: g.Group, PromptID: g.PromptID, Lang: g.Lang, Prompt: g.Prompt, Gold: prettyJSON(g.Gold)}
		for _, s := range g.Samples[:min(len(g.Samples), MaxRolloutSamples)] {
			gv.Samples = append(gv.Samples, sampleView(s))
		}
		v.Groups = append(v.Groups, gv)
	}
	return v, nil
}

func prettyJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if len(raw) == 0 || json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

// sampleView cuts a rollout's text into segments of one token, one weight
// and one side of the value spans each, on rune boundaries (a byte-level
// token may end inside a multi-byte character: the character goes to the
// token it starts in).
func sampleView(s RolloutSample) rolloutSampleView {
	v := rolloutSampleView{Index: s.Index, Reward: s.Reward, Gate: s.Gate, Parts: s.Parts, Levels: s.Levels,
		Adv: s.Adv, Finish: s.Finish, Tokens: len(s.Offsets), Values: []string{}, Segs: [][4]any{}}
	text := s.Text
	n := len(text)
	tok := make([]int, n)
	span := make([]bool, n)
	for i := range tok {
		tok[i] = -1
	}
	for t, o := range s.Offsets {
		for i := max(0, o[0]); i < min(n, o[1]); i++ {
			tok[i] = t
		}
		if t < len(s.Weights) && s.Weights[t] != 1 {
			v.Weighted++
		}
	}
	for _, sp := range s.Spans {
		lo, hi := max(0, sp[0]), min(n, sp[1])
		if lo < hi {
			v.Values = append(v.Values, text[lo:hi])
		}
		for i := lo; i < hi; i++ {
			span[i] = true
		}
	}
	weight := func(t int) float32 {
		if t >= 0 && t < len(s.Weights) {
			return s.Weights[t]
		}
		return 1
	}
	start := 0
	for i := 0; i < n; {
		_, size := utf8.DecodeRuneInString(text[i:])
		next := i + size
		if next >= n || tok[next] != tok[start] || span[next] != span[start] {
			in := 0
			if span[start] {
				in = 1
			}
			v.Segs = append(v.Segs, [4]any{text[start:min(next, n)], tok[start], weight(tok[start]), in})
			start = next
		}
		i = next
	}
	return v
}
