// Package data holds argrl's common dataset schema (docs/contracts.md §1): one JSON
// object per line, written by every importer and read by every command.
package data

import "encoding/json"

// Record is one tool-calling example: the conversation so far, the tools on
// offer, and the gold calls for the final assistant turn.
type Record struct {
	ID       string    `json:"id"`
	Lang     string    `json:"lang"` // ISO 639-1 code of the user's language
	Tools    []Tool    `json:"tools"`
	Messages []Message `json:"messages"`
	// Calls are the gold calls; empty means the correct answer is no call.
	Calls []Call `json:"calls"`
	// Response, optional, is the gold assistant text of a turn without a
	// call. A record with no tools and a response is plain chat: SFT
	// trains on the response; metrics that need calls skip it.
	Response string `json:"response,omitempty"`
	// Accept, optional, has one object per gold call listing acceptable values
	// per argument (BFCL possible-answer style); "" means "may be omitted".
	Accept []map[string][]any `json:"accept,omitempty"`
	// SMV and RejectReason are R2IF's ground-truth documents (optional).
	SMV          []map[string]SMVDoc `json:"smv,omitempty"`
	RejectReason string              `json:"reject_reason,omitempty"`
	// Reasoning, optional, is the gold <reason> text: SFT in a format with
	// a reasoning block (reason_tool) trains on it before the calls.
	Reasoning string `json:"reasoning,omitempty"`
	Split     string `json:"split,omitempty"`
	// BFCL, written by the BFCL importer, is what BFCL's AST checker reads
	// besides the response (the bfcl reward).
	BFCL *BFCLCase `json:"bfcl,omitempty"`
	// Turns, optional, makes the record a multi-turn episode: the gold of
	// each assistant turn in order (turns.go). Calls then equals
	// Turns[0].Calls, so single-turn readers score the first step.
	Turns []Turn `json:"turns,omitempty"`
	// Env, optional, names the environment that executes the episode's
	// calls and its settings (turns.go).
	Env *EnvSpec `json:"env,omitempty"`
}

// BFCLCase is a BFCL test entry as BFCL's checker sees it: the test
// category (simple_python, live_multiple, irrelevance, ...), and the
// function documents and possible answers exactly as BFCL wrote them. They
// keep what the common schema normalizes away: float vs integer, tuple,
// any, the Java and JavaScript types, and every quirk of the answers.
type BFCLCase struct {
	Category  string          `json:"category"`
	Functions json.RawMessage `json:"functions"`
	// GroundTruth is the possible_answer entry's ground_truth (absent for
	// the relevance categories).
	GroundTruth json.RawMessage `json:"ground_truth,omitempty"`
}

// Tool is a function the model may call, described by a JSON schema.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON-schema object, kept verbatim so rendering it
	// into a prompt preserves the source's key order.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// Message is one conversation turn. Role is system, user, assistant or tool.
type Message struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	ToolCalls []Call `json:"tool_calls,omitempty"` // assistant turns only
	Name      string `json:"name,omitempty"`       // tool turns: the tool that answered
}

// Call is one function call: a name and its arguments.
type Call struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// SMVDoc is R2IF's per-argument specification and modification text.
type SMVDoc struct {
	Spec string `json:"spec"`
	Mod  string `json:"mod"`
}

// PlainChat reports whether r is a plain conversation: no tools on offer
// and a text response as its gold (docs/contracts.md §1).
func (r *Record) PlainChat() bool { return len(r.Tools) == 0 && len(r.Calls) == 0 && r.Response != "" }
