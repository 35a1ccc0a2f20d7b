package synth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/argrl/argrl/data"
)

func smallDialogues(t *testing.T, seed uint64) *Dialogues {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Seed, cfg.Train, cfg.Val, cfg.Test = seed, 80, 10, 10
	d, err := GenerateDialogues(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// values collects the scalar values (as text) of decoded JSON.
func values(v any, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			values(e, out)
		}
	case []any:
		for _, e := range x {
			values(e, out)
		}
	default:
		out[fmt.Sprint(x)] = true
	}
}

// TestDialogues: every record is valid, has 2–4 calls in one-call turns
// then a no-call turn, calls = turns[0].calls, a synth env; each chain and
// each length shows up; and in every dialogue a later call takes a value
// the user never said from an earlier simulated result.
func TestDialogues(t *testing.T) {
	d := smallDialogues(t, 3)
	if len(d.Train) != 80 || len(d.Val) != 10 || len(d.Test) != 40 {
		t.Fatalf("sizes %d %d %d", len(d.Train), len(d.Val), len(d.Test))
	}
	lengths, chains := map[int]int{}, map[string]int{}
	for _, f := range d.Files() {
		for i := range f.Recs {
			r := &f.Recs[i]
			if err := r.Validate(); err != nil {
				t.Fatalf("%s: %v", r.ID, err)
			}
			n := len(r.Turns) - 1
			lengths[n]++
			chains[chainOf(r.ID)]++
			if n < 2 || n > 4 || len(r.Turns[n].Calls) != 0 || r.Env == nil || r.Env.Name != "synth" {
				t.Fatalf("%s: %d calls, last turn %v, env %+v", r.ID, n, r.Turns[n].Calls, r.Env)
			}
			sim, err := NewSim(r.Env.Seed, r.Lang)
			if err != nil {
				t.Fatal(err)
			}
			said := r.Messages[0].Content
			seen := map[string]bool{}
			fromResult := 0
			for k, tu := range r.Turns[:n] {
				if len(tu.Calls) != 1 {
					t.Fatalf("%s: turn %d has %d calls", r.ID, k, len(tu.Calls))
				}
				c := tu.Calls[0]
				for _, v := range c.Arguments {
					s := fmt.Sprint(v)
					if k > 0 && seen[s] && !strings.Contains(said, s) {
						fromResult++
					}
				}
				var res any
				if err := json.Unmarshal([]byte(sim.Call(c.Name, c.Arguments)), &res); err != nil {
					t.Fatal(err)
				}
				if m := res.(map[string]any); m["error"] != nil {
					t.Fatalf("%s: gold turn %d refused: %v", r.ID, k, m["error"])
				}
				values(res, seen)
			}
			if fromResult == 0 {
				t.Errorf("%s: no later call takes a value from an earlier result", r.ID)
			}
		}
	}
	if lengths[2] == 0 || lengths[3] == 0 || lengths[4] == 0 || len(chains) != len(builtin.chains) {
		t.Errorf("lengths %v, chains %v", lengths, chains)
	}
	if !strings.Contains(d.Report.String(), "train.jsonl") {
		t.Errorf("report %q", d.Report.String())
	}
	// Test instances are realized in every test language with one world.
	if d.Test[0].Env.Seed != d.Test[1].Env.Seed || d.Test[0].Lang == d.Test[1].Lang {
		t.Errorf("test records 0 and 1: %s/%d, %s/%d", d.Test[0].Lang, d.Test[0].Env.Seed, d.Test[1].Lang, d.Test[1].Env.Seed)
	}
}

// TestDialoguesDeterministic: the same config writes identical bytes;
// another seed other dialogues.
func TestDialoguesDeterministic(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	for i, seed := range []uint64{5, 5, 6} {
		if err := smallDialogues(t, seed).WriteDir(dirs[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"train.jsonl", "val.jsonl", "test.jsonl", "dialogues.json"} {
		a, _ := os.ReadFile(filepath.Join(dirs[0], f))
		b, _ := os.ReadFile(filepath.Join(dirs[1], f))
		c, _ := os.ReadFile(filepath.Join(dirs[2], f))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs of seed 5 (%d bytes)", f, len(a))
		}
		if f != "dialogues.json" && bytes.Equal(a, c) {
			t.Errorf("%s: seeds 5 and 6 wrote the same", f)
		}
	}
	recs, err := data.ReadFile(filepath.Join(dirs[0], "train.jsonl"))
	if err != nil || len(recs) != 80 || len(recs[0].Turns) < 3 {
		t.Fatalf("read back: %d records, %v", len(recs), err)
	}
}

// TestChainsBadEntry: a bad chain is refused with its file and line.
func TestChainsBadEntry(t *testing.T) {
	good, err := tableFS.ReadFile("chains.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, old, new, want string }{
		{"unknown api", `"api": "list_events"`, `"api": "list_eventz"`, `unknown api "list_eventz"`},
		{"missing required", `{"api": "cancel_event", "args": {"title": "$0.events.0.title", "date": "{date}"}}`, `{"api": "cancel_event", "args": {"title": "$0.events.0.title"}}`, "required argument cancel_event.date has no source"},
		{"not earlier", `"title": "$0.events.0.title"`, `"title": "$1.events.0.title"`, "not an earlier step's result"},
		{"bad source", `"title": "$0.events.0.title"`, `"title": "events"`, "neither {slot} nor $K.path"},
		{"unknown argument", `"title": "$0.events.0.title"`, `"title": "$0.events.0.title", "colour": "{c}"`, `has no argument "colour"`},
		{"template without slot", `"en": "Check what I have on {date} and cancel`, `"en": "Check what I have and cancel`, "en template does not mention {date}"},
		{"template with unknown slot", `"en": "Check what I have on {date} and cancel`, `"en": "Check what I have on {date} {x} and cancel`, "mentions {x}"},
		{"one step", `{"api": "list_events", "args": {"date": "{date}"}},`, ``, "1 steps (want 2-4)"},
	} {
		if !bytes.Contains(good, []byte(c.old)) {
			t.Fatalf("%s: test bug: %q not in chains.json", c.name, c.old)
		}
		fsys := embeddedCopy(t)
		fsys["chains.json"] = &fstest.MapFile{Data: bytes.Replace(good, []byte(c.old), []byte(c.new), 1)}
		_, err := loadTables(fsys)
		line := 1 + bytes.Count(good[:bytes.Index(good, []byte(`"name": "cancel"`))], []byte("\n"))
		want := fmt.Sprintf("chains.json:%d: chain cancel: ", line)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q ... %q", c.name, err, want, c.want)
		}
	}
}
