package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/model/chat"
	"github.com/argrl/argrl/rollout"
)

func init() { root.AddCommand(newChatCmd()) }

// chatFlags are train chat's options.
type chatFlags struct {
	gen                   genFlags
	model, adapter, tools string
	format, system        string
}

func newChatCmd() *cobra.Command {
	var f chatFlags
	c := &cobra.Command{
		Use:   "chat --model DIR [--adapter DIR] [--tools F] [--format tool_call]",
		Short: "talk with a model in a terminal: its chat template, tool calls parsed and shown, /reset",
		Long: `Talk with a model: each line read from stdin is a user message; the model
answers greedily through its chat template (--template, default from
config.json), with the conversation so far as context.

--tools F offers the tools of a JSON file (a list of {"name", "description",
"parameters"}, or OpenAI's {"type": "function", "function": {...}}); the
model's calls are parsed in --format and shown one per line as
  call: NAME {"arg": value, ...}
and kept in the history. Commands:
  /reset        start a new conversation (the tools stay)
  /tool TEXT    answer the last calls with a tool result, and let the model go on
  /quit         leave (end of input does too)
The answer goes to stdout; the backend and errors to stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runChat(cmd, &f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.model, "model", "", "Hugging Face model directory (required)")
	fl.StringVar(&f.adapter, "adapter", "", "PEFT LoRA adapter directory")
	fl.StringVar(&f.tools, "tools", "", "JSON file with the tools on offer")
	fl.StringVar(&f.format, "format", "tool_call", "output format of the calls: "+strings.Join(format.Names(), ", "))
	fl.StringVar(&f.system, "system", "", "system message (default: the template's)")
	addGenFlags(c, &f.gen, 256, "most tokens per answer")
	return c
}

func runChat(cmd *cobra.Command, f *chatFlags) error {
	if f.model == "" {
		return fmt.Errorf("chat: --model is required")
	}
	fmtr, err := format.Get(f.format, format.Options{})
	if err != nil {
		return fmt.Errorf("chat: --format: %w", err)
	}
	tools := []data.Tool{}
	if f.tools != "" {
		if tools, err = data.ReadTools(f.tools); err != nil {
			return fmt.Errorf("chat: --tools: %w", err)
		}
	}
	if f.gen.maxNewTokens < 1 || f.gen.batch < 1 {
		return fmt.Errorf("chat: --max-new-tokens %d and --batch %d: want ≥ 1", f.gen.maxNewTokens, f.gen.batch)
	}
	errw, out := cmd.ErrOrStderr(), cmd.OutOrStdout()
	s, err := openGen(f.model, f.adapter, &f.gen, true, errw)
	if err != nil {
		return fmt.Errorf("chat: %w", err)
	}
	defer s.close()
	tmplName := f.gen.template
	if tmplName == "" {
		tmplName = s.m.Config.ModelType
	}
	tmpl, err := chat.Get(tmplName)
	if err != nil {
		return fmt.Errorf("chat: %w", err)
	}
	fmt.Fprintf(errw, "chat: %s, template %s, format %s, %d tools; /reset starts over, /quit leaves\n", f.model, tmpl.Name(), fmtr.Name(), len(tools))
	params := rollout.Params{G: 1, MaxNewTokens: f.gen.maxNewTokens, StopIDs: rollout.StopIDs(s.tok, s.m.Config), Stop: f.gen.stop}

	var history []data.Message
	reset := func() {
		history = history[:0]
		if f.system != "" {
			history = append(history, data.Message{Role: "system", Content: f.system})
		}
	}
	reset()
	interactive := isTerminal(cmd.InOrStdin())
	in := bufio.NewScanner(cmd.InOrStdin())
	in.Buffer(make([]byte, 1<<16), 1<<24)
	for {
		if interactive {
			fmt.Fprint(out, "> ")
		}
		if !in.Scan() {
			break
		}
		line := strings.TrimSpace(in.Text())
		var msg data.Message
		switch {
		case line == "":
			continue
		case line == "/quit" || line == "/exit":
			return nil
		case line == "/reset":
			reset()
			fmt.Fprintln(out, "(new conversation)")
			continue
		case strings.HasPrefix(line, "/tool"):
			msg = data.Message{Role: "tool", Content: strings.TrimSpace(strings.TrimPrefix(line, "/tool"))}
			if n := len(history); n > 0 && len(history[n-1].ToolCalls) == 1 {
				msg.Name = history[n-1].ToolCalls[0].Name
			}
		case strings.HasPrefix(line, "/"):
			fmt.Fprintf(errw, "chat: unknown command %q (/reset, /tool TEXT, /quit)\n", line)
			continue
		default:
			msg = data.Message{Role: "user", Content: line}
		}
		turn := append(history, msg)
		text, err := chatTurn(cmd, s, tmpl, fmtr, tools, turn, params)
		if err != nil { // the turn is dropped; the conversation goes on
			fmt.Fprintf(errw, "chat: %v\n", err)
			continue
		}
		reply := showReply(out, fmtr.Parse(text), text)
		history = append(turn, reply)
	}
	if err := in.Err(); err != nil {
		return fmt.Errorf("chat: reading stdin: %w", err)
	}
	return nil
}

// chatTurn renders the conversation and generates the assistant's answer.
func chatTurn(cmd *cobra.Command, s *genSession, tmpl chat.Template, f format.Format, tools []data.Tool, msgs []data.Message, p rollout.Params) (string, error) {
	rec := data.Record{ID: "chat", Lang: "en", Tools: tools, Messages: msgs, Calls: []data.Call{}}
	prompts, err := rollout.RecordPrompts([]data.Record{rec}, tmpl, f, s.tok)
	if err != nil {
		return "", err
	}
	for grp, err := range s.eng.Groups(cmd.Context(), prompts, p) {
		if err != nil {
			return "", err
		}
		return grp.Samples[0].Text, nil
	}
	return "", fmt.Errorf("the engine returned no answer")
}

// showReply prints the answer: each parsed call on its own line, else the
// text; it returns the assistant message kept in the history.
func showReply(w io.Writer, p format.Parsed, text string) data.Message {
	if !p.Valid || len(p.Calls) == 0 {
		fmt.Fprintln(w, strings.TrimSpace(text))
		return data.Message{Role: "assistant", Content: text}
	}
	m := data.Message{Role: "assistant"}
	for _, c := range p.Calls {
		args, err := json.Marshal(c.Arguments)
		if err != nil {
			args = []byte(fmt.Sprintf("%v", c.Arguments))
		}
		fmt.Fprintf(w, "call: %s %s\n", c.Name, args)
		m.ToolCalls = append(m.ToolCalls, data.Call{Name: c.Name, Arguments: c.Arguments})
	}
	return m
}

// isTerminal reports whether r is an interactive terminal (the prompt "> "
// is written only then).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
