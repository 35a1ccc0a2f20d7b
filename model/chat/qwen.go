package chat

// Qwen2.5 and Qwen3 (ChatML). The layout, from their chat templates:
//
//	<|im_start|>system
//	{system}\n\n# Tools ... <tools>\n{tool json}...\n</tools>\n\n{how to call}<|im_end|>
//	<|im_start|>user\n{content}<|im_end|>
//	<|im_start|>assistant\n{content}\n{calls}<|im_end|>
//	<|im_start|>user\n<tool_response>\n{result}\n</tool_response>...<|im_end|>   (consecutive tool turns share one user turn)
//	<|im_start|>assistant\n                      <- prompt ends here (Qwen3: then "<think>\n\n</think>\n\n")
//	{calls}<|im_end|>                           <- target
//
// Without tools the system turn is the system message alone. Qwen2.5 falls
// back to its default system prompt; Qwen3 has none.

import (
	"fmt"
	"strings"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
)

const qwen25System = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

type qwen struct {
	name  string
	qwen3 bool
	opts  Options
}

var _ Template = (*qwen)(nil)

func (q *qwen) Name() string { return q.name }

func (q *qwen) Render(rec data.Record, f format.Format, withTarget bool) (Rendered, error) {
	if f == nil {
		return Rendered{}, fmt.Errorf("chat: %s: no output format", q.name)
	}
	if err := checkRoles(rec); err != nil {
		return Rendered{}, err
	}
	msgs := rec.Messages
	system, hasSystem := q.opts.System, q.opts.System != ""
	if len(msgs) > 0 && msgs[0].Role == "system" {
		system, hasSystem = msgs[0].Content, true
		msgs = msgs[1:]
	} else if !hasSystem && !q.qwen3 {
		system, hasSystem = qwen25System, true
	}

	var b strings.Builder
	if len(rec.Tools) > 0 {
		b.WriteString("<|im_start|>system\n")
		if hasSystem {
			b.WriteString(system)
			b.WriteString("\n\n")
		}
		b.WriteString("# Tools\n\nYou may call one or more functions to assist with the user query.\n\n")
		b.WriteString("You are provided with function signatures within <tools></tools> XML tags:\n<tools>")
		for _, t := range rec.Tools {
			j, err := toolJSON(t, 0)
			if err != nil {
				return Rendered{}, fmt.Errorf("chat: record %q: %w", rec.ID, err)
			}
			b.WriteString("\n")
			b.WriteString(j)
		}
		b.WriteString("\n</tools>\n\n")
		instr := q.opts.Instructions
		if instr == "" {
			instr = FormatInstructions("qwen", f)
		}
		b.WriteString(instr)
		b.WriteString("<|im_end|>\n")
	} else if hasSystem {
		b.WriteString("<|im_start|>system\n" + system + "<|im_end|>\n")
	}

	for i, m := range msgs {
		switch m.Role {
		case "user", "system":
			b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
		case "assistant":
			b.WriteString("<|im_start|>assistant\n" + assistantText(m, f, rec.Tools) + "<|im_end|>\n")
		case "tool":
			if i == 0 || msgs[i-1].Role != "tool" {
				b.WriteString("<|im_start|>user")
			}
			b.WriteString("\n<tool_response>\n" + m.Content + "\n</tool_response>")
			if i == len(msgs)-1 || msgs[i+1].Role != "tool" {
				b.WriteString("<|im_end|>\n")
			}
		}
	}
	b.WriteString("<|im_start|>assistant\n")
	if q.qwen3 {
		b.WriteString("<think>\n\n</think>\n\n") // enable_thinking=False
	}
	r := Rendered{Prompt: b.String()}
	if withTarget {
		r.Target = goldText(rec, f) + "<|im_end|>"
	}
	r.Text = r.Prompt + r.Target
	return r, nil
}
