package rollout

import (
	"fmt"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/model/chat"
	"github.com/argrl/argrl/model/tokenizer"
)

// RecordPrompts renders each record's conversation with the chat template
// up to the assistant header (no target) and tokenizes it exactly as SFT
// does (chat.Rendered.Encode: the prompt ids of the training sequence), so
// a rollout continues the prompt the policy is trained on.
func RecordPrompts(recs []data.Record, t chat.Template, f format.Format, tok *tokenizer.Tokenizer) ([]Prompt, error) {
	if t == nil || f == nil || tok == nil {
		return nil, fmt.Errorf("rollout: RecordPrompts needs a template, a format and a tokenizer")
	}
	out := make([]Prompt, len(recs))
	for i, rec := range recs {
		r, err := t.Render(rec, f, false)
		if err != nil {
			return nil, fmt.Errorf("rollout: record %d (id %q): %w", i, rec.ID, err)
		}
		enc := r.Encode(tok)
		out[i] = Prompt{ID: rec.ID, IDs: enc.IDs[:enc.PromptLen]}
	}
	return out, nil
}
