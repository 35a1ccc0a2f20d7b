package data

import (
	"path/filepath"
	"strings"
	"testing"
)

// writeSplitFile writes one record per split value given ("" for none).
func writeSplitFile(t *testing.T, splits ...string) string {
	t.Helper()
	var recs []Record
	for i, s := range splits {
		recs = append(recs, Record{ID: "r" + string(rune('a'+i)), Lang: "en", Tools: []Tool{},
			Messages: []Message{{Role: "user", Content: "hi"}}, Calls: []Call{}, Split: s})
	}
	p := filepath.Join(t.TempDir(), "d.jsonl")
	if err := WriteFile(p, recs); err != nil {
		t.Fatal(err)
	}
	return p
}

func ids(recs []Record) string {
	var s []string
	for _, r := range recs {
		s = append(s, r.ID)
	}
	return strings.Join(s, ",")
}

func TestReadTrainingSelects(t *testing.T) {
	p := writeSplitFile(t, "train", "validation", "test", "train", "test")
	for _, c := range []struct{ spec, split, key, want string }{
		{p, "train", "data.train", "ra,rd"},
		{p + "#split=train", "", "data.train", "ra,rd"},
		{p + "#split=test", "test", "data.val", "rc,re"},
		{p, "validation", "data.val", "rb"},
	} {
		recs, err := ReadTraining(c.spec, c.split, c.key)
		if err != nil {
			t.Fatalf("%s split %q: %v", c.spec, c.split, err)
		}
		if got := ids(recs); got != c.want {
			t.Errorf("%s split %q: records %s, want %s", c.spec, c.split, got, c.want)
		}
	}
	if recs, err := ReadSpec(p + "#split=validation"); err != nil || ids(recs) != "rb" {
		t.Errorf("ReadSpec #split=validation: %s, %v; want rb", ids(recs), err)
	}
	if recs, err := ReadSpec(p); err != nil || len(recs) != 5 {
		t.Errorf("ReadSpec without a selection: %d records, %v; want all 5", len(recs), err)
	}
}

// TestReadTrainingLeak: a file mixing splits, given to training without a
// selection, is refused naming the field, the counts and the way out.
func TestReadTrainingLeak(t *testing.T) {
	p := writeSplitFile(t, "train", "validation", "test", "train")
	_, err := ReadTraining(p, "", "data.train")
	if err == nil {
		t.Fatal("a file mixing train, validation and test was accepted as data.train without a selection")
	}
	for _, want := range []string{p, "split:", `"split" field`, "train 2, validation 1, test 1", "data.train_split", "#split=NAME"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// A file holding only another split is refused too (data.train fed the test file).
	testOnly := writeSplitFile(t, "test", "test")
	if _, err := ReadTraining(testOnly, "", "data.train"); err == nil || !strings.Contains(err.Error(), "test 2") {
		t.Errorf("data.train = a test-only file: %v, want the leak error", err)
	}
	// What train data synth writes: each file holds its key's own split.
	trainOnly := writeSplitFile(t, "train", "train")
	if recs, err := ReadTraining(trainOnly, "", "data.train"); err != nil || len(recs) != 2 {
		t.Errorf("data.train = a train-only file: %d records, %v", len(recs), err)
	}
	valOnly := writeSplitFile(t, "validation")
	if _, err := ReadTraining(valOnly, "", "data.val"); err != nil {
		t.Errorf("data.val = a validation-only file: %v", err)
	}
	none := writeSplitFile(t, "", "")
	if recs, err := ReadTraining(none, "", "data.train"); err != nil || len(recs) != 2 {
		t.Errorf("a file without splits: %d records, %v", len(recs), err)
	}
}

func TestReadTrainingErrors(t *testing.T) {
	p := writeSplitFile(t, "train", "train")
	for _, c := range []struct{ spec, split, want string }{
		{p, "test", `no record has split "test" (train 2)`},
		{p + "#split=train", "validation", "give one"},
		{p + "#split=dev", "", "split must be one of train, validation, test"},
		{"#split=train", "", "no file before"},
		{filepath.Join(t.TempDir(), "missing.jsonl"), "train", "no such file"},
	} {
		_, err := ReadTraining(c.spec, c.split, "data.train")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s split %q: error %v, want one containing %q", c.spec, c.split, err, c.want)
		}
	}
}
