package chat

// Llama-3.1 (also used for 3.0, 3.2 and 3.3, whose tool conventions are
// 3.1's). The layout, from its chat template with tools_in_user_message:
//
//	<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n
//	Environment: ipython\n                        (only with tools)
//	Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n{system}<|eot_id|>
//	<|start_header_id|>user<|end_header_id|>\n\n
//	Given the following functions, ...\n\n{how to call}\n\n{tool json, indent 4}\n\n...{first user message}<|eot_id|>
//	<|start_header_id|>assistant<|end_header_id|>\n\n{calls}<|eot_id|>
//	<|start_header_id|>ipython<|end_header_id|>\n\n{tool result}<|eot_id|>
//	<|start_header_id|>assistant<|end_header_id|>\n\n      <- prompt ends here
//	{calls}<|eot_id|>                                      <- target
//
// Message contents are trimmed as the template's `trim` does; tool results
// are not. Tool results are written verbatim: the template's "content is
// iterable" test is true for strings in Jinja, so Hugging Face JSON-quotes a
// string result; we do not copy that quirk.

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
)

type llama struct {
	opts Options
}

var _ Template = (*llama)(nil)

func (l *llama) Name() string { return "llama3" }

// pyTrim is Python's str.strip(): Unicode whitespace plus U+001C..U+001F.
func pyTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) })
}

func header(role string) string { return "<|start_header_id|>" + role + "<|end_header_id|>\n\n" }

func (l *llama) Render(rec data.Record, f format.Format, withTarget bool) (Rendered, error) {
	if f == nil {
		return Rendered{}, fmt.Errorf("chat: llama3: no output format")
	}
	if err := checkRoles(rec); err != nil {
		return Rendered{}, err
	}
	msgs := rec.Messages
	system := l.opts.System
	if len(msgs) > 0 && msgs[0].Role == "system" {
		system = pyTrim(msgs[0].Content)
		msgs = msgs[1:]
	}
	date := l.opts.Date
	if date == "" {
		date = "26 Jul 2024"
	}

	var b strings.Builder
	b.WriteString("<|begin_of_text|>" + header("system"))
	if len(rec.Tools) > 0 {
		b.WriteString("Environment: ipython\n")
	}
	b.WriteString("Cutting Knowledge Date: December 2023\nToday Date: " + date + "\n\n")
	b.WriteString(system + "<|eot_id|>")

	if len(rec.Tools) > 0 {
		if len(msgs) == 0 || msgs[0].Role != "user" {
			return Rendered{}, fmt.Errorf("chat: record %q: llama3 puts the tools in the first user message, but the conversation does not start with one", rec.ID)
		}
		first := pyTrim(msgs[0].Content)
		msgs = msgs[1:]
		b.WriteString(header("user"))
		if f.Name() == "pythonic" {
			b.WriteString("Given the following functions, please respond with a function call with its proper arguments that best answers the given prompt.\n\n")
		} else {
			b.WriteString("Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n")
		}
		instr := l.opts.Instructions
		if instr == "" {
			instr = FormatInstructions("llama", f)
		}
		b.WriteString(instr + "\n\n")
		for _, t := range rec.Tools {
			j, err := toolJSON(t, 4)
			if err != nil {
				return Rendered{}, fmt.Errorf("chat: record %q: %w", rec.ID, err)
			}
			b.WriteString(j + "\n\n")
		}
		b.WriteString(first + "<|eot_id|>")
	}

	for _, m := range msgs {
		switch m.Role {
		case "tool":
			b.WriteString(header("ipython") + m.Content + "<|eot_id|>")
		case "assistant":
			b.WriteString(header("assistant") + pyTrim(assistantText(m, f, rec.Tools)) + "<|eot_id|>")
		default:
			b.WriteString(header(m.Role) + pyTrim(m.Content) + "<|eot_id|>")
		}
	}
	b.WriteString(header("assistant"))
	r := Rendered{Prompt: b.String()}
	if withTarget {
		r.Target = goldText(rec, f) + "<|eot_id|>"
	}
	r.Text = r.Prompt + r.Target
	return r, nil
}
