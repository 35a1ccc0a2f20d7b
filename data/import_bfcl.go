package data

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	bfclck "github.com/argrl/argrl/internal/bfcl"
)

// ImportBFCL converts a Berkeley Function Calling Leaderboard question file
// (BFCL_v4_<category>.json: one object per line with "id", "question" and
// "function") together with its possible_answer file (opts.Answers: "id" and
// "ground_truth", a list of {function_name: {param: [acceptable values]}}).
//
//   - bfcl: the test category (the id without its last "_N" part, else the
//     file name's), the function list and the ground truth verbatim: the
//     bfcl reward scores against them exactly as BFCL's checker does.
//   - question: a list of turns, each a list of {"role", "content"} messages
//     (all turns are kept in order); a plain string is one user message.
//   - function: the tool list (a single object is accepted), as BFCL shows
//     it to models: the language note appended to each description, and
//     for Java and JavaScript every parameter a string in that language's
//     syntax (its type named in the description); schemas normalized to
//     JSON schema (dict→object, float→number, tuple→array, ...), keeping
//     key order.
//   - accept: the possible answers per argument, with nested dicts (whose
//     values are themselves option lists) reduced to their first choices;
//     for Java and JavaScript each answer written as the literal the
//     checker converts back to it.
//   - calls: per argument the first acceptable value ("" first means the
//     argument is omitted), or the first non-"" one for a required
//     argument.
//   - irrelevance categories have no possible answers and become
//     calls=[]; so does live_relevance, which has no gold call (any call
//     passes there; the import notes it).
//
// Quirks of the official data are handled as the checker handles them and
// counted in ImportStats.Quirks: an answer naming a parameter the function
// does not declare (left out; with "" among its values the checker accepts
// calls without it, else no response passes), an empty list of acceptable
// values or a required parameter the answer lacks (no response passes; the
// record's tool stops requiring it so the record stays valid), a required
// parameter whose only acceptable value is "" (the gold passes ""), and
// every gold call the checker itself would reject.
//
// The multi-turn categories import as multi-turn records where argrl
// simulates their classes (import_bfcl_multi.go); the other agentic
// categories (execution-trace answers) are refused with an error. Answers
// are matched by id, or by position when the files carry no ids.
func ImportBFCL(path string, opts ImportOptions) ([]Record, ImportStats, error) {
	items, err := readItems(path)
	if err != nil {
		return nil, ImportStats{}, err
	}
	if isBFCLMultiTurn(path, items) {
		return importBFCLMultiTurn(path, items, opts)
	}
	answers, byPos, err := readBFCLAnswers(opts.Answers)
	if err != nil {
		return nil, ImportStats{}, err
	}
	quirks := map[string]int{}
	relevance := 0
	pos := 0
	recs, st, err := convertAll(path, items, opts, func(it item) ([]Record, error) {
		var q struct {
			ID            string          `json:"id"`
			Question      json.RawMessage `json:"question"`
			Function      json.RawMessage `json:"function"`
			InitialConfig json.RawMessage `json:"initial_config"`
		}
		if err := json.Unmarshal(it.Raw, &q); err != nil {
			return nil, err
		}
		idx := pos
		pos++
		id := q.ID
		if id == "" {
			id = fmt.Sprintf("bfcl-%06d", idx)
		}
		cat := bfclCategory(q.ID, path)
		for _, unsupported := range []string{"multi_turn", "memory", "web_search", "format_sensitivity"} {
			if strings.Contains(cat, unsupported) || q.InitialConfig != nil {
				return nil, fmt.Errorf("%s: BFCL multi-turn and agentic categories are not supported (their answers are execution traces)", id)
			}
		}
		if len(q.Function) == 0 || isNull(q.Function) {
			return nil, fmt.Errorf("%s: function: missing", id)
		}
		rec := Record{ID: id, Lang: opts.Lang, Calls: []Call{},
			BFCL: &BFCLCase{Category: cat, Functions: compact(q.Function)}}
		var err error
		if rec.Messages, err = bfclMessages(q.Question); err != nil {
			return nil, fmt.Errorf("%s: question: %w", id, err)
		}
		if rec.Tools, err = bfclTools(q.Function, bfclck.LanguageOf(cat)); err != nil {
			return nil, fmt.Errorf("%s: function: %w", id, err)
		}
		if bfclck.IsRelevance(cat) {
			if !strings.Contains(cat, "irrelevance") {
				relevance++
			}
			return []Record{rec}, nil
		}
		gt, ok := answers[q.ID]
		if !ok && q.ID == "" && idx < len(byPos) {
			gt, ok = byPos[idx], true
		}
		switch {
		case !ok && opts.Answers == "":
			return nil, fmt.Errorf("%s: no possible answer (pass the possible_answer file with --answers)", id)
		case !ok:
			return nil, fmt.Errorf("%s: no possible answer in %s", id, opts.Answers)
		}
		rec.BFCL.GroundTruth = compact(gt)
		met, err := bfclGold(&rec, gt)
		if err != nil {
			return nil, fmt.Errorf("%s: ground_truth: %w", id, err)
		}
		if r, err := bfclSelfCheck(&rec); err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		} else if !r.Valid {
			met = append(met, "the gold call fails the checker ("+r.ErrorType+")")
		}
		for _, m := range met {
			quirks[m]++
		}
		return []Record{rec}, nil
	})
	if len(quirks) > 0 {
		st.Quirks = quirks
	}
	if relevance > 0 {
		st.Notes = append(st.Notes, fmt.Sprintf("%d live_relevance items have no gold call: written with calls [] and scored only by the bfcl reward (any call passes); the other metrics read them as no-call turns", relevance))
	}
	return recs, st, err
}

// readBFCLAnswers reads a possible_answer file: ground truths by id, and in
// file order.
func readBFCLAnswers(path string) (map[string]json.RawMessage, []json.RawMessage, error) {
	byID := map[string]json.RawMessage{}
	if path == "" {
		return byID, nil, nil
	}
	aitems, err := readItems(path)
	if err != nil {
		return nil, nil, err
	}
	var byPos []json.RawMessage
	for _, a := range aitems {
		var head struct {
			ID          string          `json:"id"`
			GroundTruth json.RawMessage `json:"ground_truth"`
		}
		if err := json.Unmarshal(a.Raw, &head); err != nil {
			return nil, nil, &Error{File: path, Line: a.Line, Msg: err.Error()}
		}
		if head.GroundTruth == nil {
			return nil, nil, &Error{File: path, Line: a.Line, Field: "ground_truth", Msg: "missing"}
		}
		if head.ID != "" {
			byID[head.ID] = head.GroundTruth
		}
		byPos = append(byPos, head.GroundTruth)
	}
	return byID, byPos, nil
}

var bfclFileName = regexp.MustCompile(`^BFCL_v\d+_(.+)\.jsonl?$`)

// bfclCategory is BFCL's test category of an entry: its id without the
// last "_" part (live_simple_3-2-0 → live_simple), else the file's name
// (BFCL_v4_simple_python.json → simple_python).
func bfclCategory(id, path string) string {
	if i := strings.LastIndexByte(strings.SplitN(id, ":", 2)[0], '_'); i > 0 {
		return id[:i]
	}
	if m := bfclFileName.FindStringSubmatch(filepath.Base(path)); m != nil {
		return m[1]
	}
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}

func bfclMessages(raw json.RawMessage) ([]Message, error) {
	if kindOf(raw) == "string" {
		var s string
		json.Unmarshal(raw, &s)
		return []Message{{Role: "user", Content: s}}, nil
	}
	var turns []json.RawMessage
	if err := json.Unmarshal(raw, &turns); err != nil {
		return nil, fmt.Errorf("must be a string or a list of turns")
	}
	var out []Message
	for _, t := range turns {
		var msgs []Message
		if kindOf(t) == "object" { // a flat list of messages
			var m Message
			if err := json.Unmarshal(t, &m); err != nil {
				return nil, err
			}
			msgs = []Message{m}
		} else if err := json.Unmarshal(t, &msgs); err != nil {
			return nil, fmt.Errorf("a turn must be a list of {role, content} messages")
		}
		out = append(out, msgs...)
	}
	return out, nil
}
