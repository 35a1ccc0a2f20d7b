package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/argrl/argrl/model/tokenizer"
	"github.com/argrl/argrl/model/tokenizer/tokenizertest"
)

func TestTokenizeCommand(t *testing.T) {
	dir := tokenizertest.ModelDir(t, "llama3_1")
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"Hola, ¿qué tal? 12345", "<|eot_id|>x  y\n"}
	for _, noSpecial := range []bool{false, true} {
		args := []string{"tokenize", "--tokenizer", dir}
		if noSpecial {
			args = append(args, "--no-special")
		}
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(append(args, texts...))
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != len(texts) {
			t.Fatalf("%d lines for %d texts:\n%s", len(lines), len(texts), out.String())
		}
		for i, l := range lines {
			var got struct {
				IDs     []int32  `json:"ids"`
				Offsets [][2]int `json:"offsets"`
			}
			dec := json.NewDecoder(strings.NewReader(l))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			ids, offs := tok.Encode(texts[i], !noSpecial)
			if len(got.IDs) != len(ids) || len(got.Offsets) != len(offs) {
				t.Fatalf("text %q: got %v %v, want %v %v", texts[i], got.IDs, got.Offsets, ids, offs)
			}
			for k := range ids {
				if got.IDs[k] != ids[k] || got.Offsets[k] != offs[k] {
					t.Fatalf("text %q: got %v %v, want %v %v", texts[i], got.IDs, got.Offsets, ids, offs)
				}
			}
			if (got.IDs[0] == 128000) == noSpecial {
				t.Errorf("--no-special=%v: ids %v", noSpecial, got.IDs)
			}
		}
	}
}
