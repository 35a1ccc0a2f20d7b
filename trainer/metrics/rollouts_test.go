package metrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestRolloutsRoundTripAndBounds(t *testing.T) {
	dir := t.TempDir()
	var groups []RolloutGroup
	for g := 0; g < MaxRolloutGroups+2; g++ {
		grp := RolloutGroup{Group: g, PromptID: "p" + string(rune('0'+g)), Lang: "es", Prompt: strings.Repeat("é", maxPromptBytes),
			Gold: json.RawMessage(`[{"name":"f","arguments":{"x":1}}]`)}
		for i := 0; i < MaxRolloutSamples+3; i++ {
			grp.Samples = append(grp.Samples, RolloutSample{Index: i, Text: `{"x": "ab"}`, Offsets: [][2]int{{0, 7}, {7, 9}, {9, 11}},
				Weights: []float32{1, 3, 1}, Spans: [][2]int{{7, 9}}, Reward: float64(i), Gate: "fcm",
				Parts: map[string]float64{"alc_cont": 2}, Levels: map[string]bool{"tid": true}, Adv: -0.5, Finish: "stop"})
		}
		groups = append(groups, grp)
	}
	path, err := WriteRollouts(dir, 40, groups)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, "rollouts", "step-000040.jsonl") {
		t.Fatalf("path %s", path)
	}
	got, err := ReadRollouts(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != MaxRolloutGroups {
		t.Fatalf("%d groups, want %d", len(got), MaxRolloutGroups)
	}
	for i, g := range got {
		if g.Step != 40 || len(g.Samples) != MaxRolloutSamples || g.PromptID != groups[i].PromptID {
			t.Fatalf("group %d: step %d, %d samples, id %s", i, g.Step, len(g.Samples), g.PromptID)
		}
		if len(g.Prompt) > maxPromptBytes+len("…") || !strings.HasSuffix(g.Prompt, "é…") {
			t.Fatalf("prompt not cut on a rune boundary: %d bytes, ends %q", len(g.Prompt), g.Prompt[len(g.Prompt)-6:])
		}
		if want := groups[i].Samples[3]; !reflect.DeepEqual(g.Samples[3], want) {
			t.Fatalf("sample 3: %+v, want %+v", g.Samples[3], want)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "rollouts"))
	if len(ents) != 1 {
		t.Fatalf("rollouts/ holds %d entries (a temporary file left?)", len(ents))
	}
	if _, err := WriteRollouts(dir, 7, groups[:1]); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "rollouts", "notes.txt"), nil, 0o644)
	steps, err := RolloutSteps(dir)
	if err != nil || !reflect.DeepEqual(steps, []int{7, 40}) {
		t.Fatalf("steps %v, %v", steps, err)
	}
	if steps, err := RolloutSteps(t.TempDir()); err != nil || len(steps) != 0 {
		t.Fatalf("no rollouts/: %v, %v", steps, err)
	}
	bad := filepath.Join(dir, "rollouts", "step-000009.jsonl")
	os.WriteFile(bad, []byte("{\"step\":9,\"samples\":[]}\n{\"step\":\n"), 0o644)
	if _, err := ReadRollouts(bad); err == nil || !strings.Contains(err.Error(), "step-000009.jsonl:2") {
		t.Fatalf("corrupt file: %v", err)
	}
}
