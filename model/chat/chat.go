// Package chat renders docs/contracts.md §1 records into the chat layout a model
// family was trained on, as Go code rather than Jinja:
//
//	qwen2.5 (alias qwen2)   ChatML; tools listed in the system turn in Qwen's words
//	qwen3                   the same, non-thinking mode (empty <think> block)
//	llama3  (alias llama3.1, llama3.2, llama)  Llama-3.1 headers, tools in the first user turn
//
// The text splits into a prompt, which ends with the assistant header, and
// the target: the gold calls written by the output format (data/format)
// followed by the end-of-turn token. Encode tokenizes the two parts
// separately, as rollout sees them (prompt ids, then generated ids), and
// marks the target tokens for the SFT loss.
//
// Where we depart from the models' own templates, on purpose:
//   - every assistant turn, earlier ones included, writes its calls with the
//     configured output format, so the history matches what the model is
//     trained to produce (the templates use their native layout);
//   - the sentence telling the model how to call tools follows the output
//     format: Qwen's own text for tool_call, ours for pythonic (after paper
//     000 App. H) and reason_tool (paper 002 §3.1.1), and for Llama-3 with
//     any format but its native JSON;
//   - Qwen3's <think> parsing of earlier assistant turns is not done;
//   - Llama-3.1's built-in tools (brave_search, ...) and <|eom_id|> are not used.
package chat

import (
	"fmt"
	"sort"
	"strings"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/model/tokenizer"
)

// Template renders records for one model family.
type Template interface {
	Name() string
	// Render writes rec's conversation and, with withTarget, the gold
	// answer to rec.Calls written in format f.
	Render(rec data.Record, f format.Format, withTarget bool) (Rendered, error)
}

// Rendered is a rendered record. Text = Prompt + Target.
type Rendered struct {
	Text   string
	Prompt string // ends with the assistant header
	Target string // the assistant answer and its end-of-turn token; "" without target
}

// Encoded is a tokenized Rendered.
type Encoded struct {
	IDs []int32
	// AssistantMask is true on the tokens of the final assistant target:
	// the tokens the SFT loss is taken on.
	AssistantMask []bool
	// PromptLen is the number of prompt tokens: IDs[:PromptLen] is what
	// rollout feeds the model, IDs[PromptLen:] the response.
	PromptLen int
	// Offsets are the byte ranges of each token in Rendered.Text.
	Offsets [][2]int
}

// Options adjust a template. The zero value gives each family's defaults.
type Options struct {
	// System is the system prompt used when a record has no system message.
	// Empty: Qwen2.5's "You are Qwen, created by Alibaba Cloud. You are a
	// helpful assistant."; none for Qwen3 and Llama-3.
	System string
	// Instructions replaces the sentence that tells the model how to write
	// calls (see FormatInstructions).
	Instructions string
	// Date is Llama-3.1's "Today Date" (default "26 Jul 2024", the template's).
	Date string
}

var builders = map[string]func(Options) Template{
	"qwen2.5": func(o Options) Template { return &qwen{name: "qwen2.5", opts: o} },
	"qwen3":   func(o Options) Template { return &qwen{name: "qwen3", qwen3: true, opts: o} },
	"llama3":  func(o Options) Template { return &llama{opts: o} },
}

var aliases = map[string]string{
	"qwen2": "qwen2.5", "qwen2.5": "qwen2.5", "qwen3": "qwen3",
	"llama": "llama3", "llama3": "llama3", "llama3.1": "llama3", "llama3.2": "llama3", "llama3.3": "llama3",
}

// Names lists the accepted template names, aliases included, sorted.
func Names() []string {
	out := make([]string, 0, len(aliases))
	for n := range aliases {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Get returns the named template with default options. Names are the
// template names, their aliases, or a config.json model_type (qwen2, qwen3, llama).
func Get(name string) (Template, error) { return New(name, Options{}) }

// New returns the named template with options.
func New(name string, o Options) (Template, error) {
	canon, ok := aliases[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return nil, fmt.Errorf("chat: unknown template %q (valid: %s)", name, strings.Join(Names(), ", "))
	}
	return builders[canon](o), nil
}

// Encode tokenizes r: the prompt and the target separately (no special
// tokens added: the templates write BOS themselves), then concatenated.
func (r Rendered) Encode(tok *tokenizer.Tokenizer) Encoded {
	pIDs, pOffs := tok.Encode(r.Prompt, false)
	tIDs, tOffs := tok.Encode(r.Target, false)
	e := Encoded{
		IDs:           append(pIDs, tIDs...),
		AssistantMask: make([]bool, len(pIDs)+len(tIDs)),
		PromptLen:     len(pIDs),
		Offsets:       pOffs,
	}
	for i, o := range tOffs {
		e.AssistantMask[len(pIDs)+i] = true
		e.Offsets = append(e.Offsets, [2]int{o[0] + len(r.Prompt), o[1] + len(r.Prompt)})
	}
	return e
}

// goldText is the assistant text SFT trains on: the plain-chat record's
// response, else the gold calls in format f (after the record's reasoning
// when it has one and f writes a reasoning block).
func goldText(rec data.Record, f format.Format) string {
	if rec.PlainChat() {
		return rec.Response
	}
	if rr, ok := f.(format.ReasonRenderer); ok && rec.Reasoning != "" {
		return rr.RenderWithReason(rec.Reasoning, rec.Calls, rec.Tools)
	}
	return f.Render(rec.Calls, rec.Tools)
}

// Debug renders rec with its target and returns the text for a human: the
// prompt and the target under headers (the --debug-template flag).
func Debug(t Template, rec data.Record, f format.Format) (string, error) {
	r, err := t.Render(rec, f, true)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("----- %s / %s: prompt (%d bytes) -----\n%s\n----- target (loss) -----\n%s\n----- end -----\n",
		t.Name(), f.Name(), len(r.Prompt), r.Prompt, r.Target), nil
}

// qwenToolCallInstructions is Qwen2.5/Qwen3's own text for its native format.
const qwenToolCallInstructions = "For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>"

// FormatInstructions returns the sentence that tells the model how to write
// calls in format f; family is "qwen" or "llama".
func FormatInstructions(family string, f format.Format) string {
	switch f.Name() {
	case "tool_call":
		if family == "qwen" {
			return qwenToolCallInstructions
		}
		return "For each function call, write a JSON object with the function name and its arguments inside <tool_call></tool_call> tags, one per line:\n" +
			"<tool_call>{\"name\": <function-name>, \"arguments\": <args-json-object>}</tool_call>\n" +
			"If no function applies, answer in plain text. Do not use variables."
	case "pythonic":
		return "Write the calls as a Python list of function calls and nothing else:\n" +
			"[function_name(arg1=\"value1\", arg2=\"value2\"), ...]\n" +
			"Use only the functions above, with their argument names exactly as defined. If no call is needed, write []."
	case "reason_tool":
		reject := format.DefaultRejectString
		if rs, ok := f.(interface{ RejectString() string }); ok {
			reject = rs.RejectString()
		}
		return "First explain your reasoning inside <reason></reason>, then write the calls as a JSON list inside <tool></tool>, and nothing else:\n" +
			"<reason>...</reason><tool>[{\"name\": <function-name>, \"arguments\": <args-json-object>}]</tool>\n" +
			"If no function applies, write <tool>" + reject + "</tool>."
	}
	return "Write the function calls in the " + f.Name() + " format."
}

// toolJSON writes a tool as the templates see it, {"type": "function",
// "function": {"name", "description", "parameters"}}, in Python json.dumps
// layout (indent 0: one line).
func toolJSON(t data.Tool, indent int) (string, error) {
	fn := []pyField{{"name", pyString(t.Name)}}
	if t.Description != "" {
		fn = append(fn, pyField{"description", pyString(t.Description)})
	}
	if len(t.Parameters) > 0 && strings.TrimSpace(string(t.Parameters)) != "null" {
		p, err := parsePy(t.Parameters)
		if err != nil {
			return "", fmt.Errorf("tool %q: parameters: %w", t.Name, err)
		}
		fn = append(fn, pyField{"parameters", p})
	}
	v := pyObject([]pyField{{"type", pyString("function")}, {"function", pyObject(fn)}})
	var b strings.Builder
	v.write(&b, indent, 0)
	return b.String(), nil
}

// checkRoles rejects messages a template cannot place.
func checkRoles(rec data.Record) error {
	for i, m := range rec.Messages {
		switch m.Role {
		case "system", "user", "assistant", "tool":
		default:
			return fmt.Errorf("chat: record %q: messages[%d]: unknown role %q (want system, user, assistant or tool)", rec.ID, i, m.Role)
		}
		if len(m.ToolCalls) > 0 && m.Role != "assistant" {
			return fmt.Errorf("chat: record %q: messages[%d]: tool_calls on a %s message", rec.ID, i, m.Role)
		}
	}
	return nil
}

// assistantText is an earlier assistant turn: its content, then its calls
// in the output format.
func assistantText(m data.Message, f format.Format, tools []data.Tool) string {
	if len(m.ToolCalls) == 0 {
		return m.Content
	}
	calls := f.Render(m.ToolCalls, tools)
	if m.Content == "" {
		return calls
	}
	return m.Content + "\n" + calls
}
