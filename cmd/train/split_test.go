package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file with train, validation and test records (what `train data split`
// writes) given to training: refused without a selection, naming the
// field; data.train_split or a #split= suffix selects the records.
func TestSFTSplitSelection(t *testing.T) {
	td, err := filepath.Abs("../../trainer/testdata/sft")
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	for _, f := range []string{"train.jsonl", "val.jsonl"} { // 24 train, 8 validation
		b, err := os.ReadFile(filepath.Join(td, f))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	dir := t.TempDir()
	mixed := filepath.Join(dir, "split.jsonl")
	if err := os.WriteFile(mixed, all, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := sftYAML(t, filepath.Join(dir, "leak"), "")
	_, stderr, code := runTrain(t, "sft", "--config", cfg, "--set", "data.train="+mixed)
	if code == 0 {
		t.Fatalf("training on a file mixing splits without a selection exited 0:\n%s", stderr)
	}
	for _, w := range []string{`key "data.train"`, mixed, `split: the records carry a "split" field (train 24, validation 8)`, "data.train_split"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("leak error lacks %q:\n%s", w, stderr)
		}
	}
	for i, sets := range [][]string{
		{"data.train=" + mixed, "data.train_split=train", "data.val=" + mixed + "#split=validation"},
		{"data.train=" + mixed + "#split=train", "data.val=" + mixed, "data.val_split=validation"},
	} {
		args := []string{"sft", "--config", sftYAML(t, filepath.Join(dir, "run"+string(rune('0'+i))), ""), "--set", "optim.max_steps=1"}
		for _, s := range sets {
			args = append(args, "--set", s)
		}
		_, stderr, code := runTrain(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", sets, code, stderr)
		}
		if !strings.Contains(stderr, "sft: 24 training examples") {
			t.Errorf("%v: want the 24 train records only:\n%s", sets, stderr)
		}
	}
	_, stderr, code = runTrain(t, "sft", "--config", cfg, "--set", "data.train_split=dev")
	if code == 0 || !strings.Contains(stderr, `key "data.train_split": must be train, validation or test`) {
		t.Errorf("data.train_split=dev: exit %d\n%s", code, stderr)
	}
}
