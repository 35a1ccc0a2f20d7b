package data

import (
	"fmt"
	"slices"
	"strings"
)

// splitSuffix introduces a per-path split selection: "file.jsonl#split=train".
const splitSuffix = "#split="

// ParseSpec splits a data path of the form "file.jsonl#split=NAME" into
// the file and the split it selects ("" when the path has no selection).
// NAME must be one of Splits.
func ParseSpec(spec string) (path, split string, err error) {
	i := strings.LastIndex(spec, splitSuffix)
	if i < 0 {
		return spec, "", nil
	}
	path, split = spec[:i], spec[i+len(splitSuffix):]
	if path == "" {
		return "", "", fmt.Errorf("data: %q: no file before %s", spec, splitSuffix)
	}
	if !slices.Contains(Splits, split) {
		return "", "", fmt.Errorf("data: %q: split must be one of %s, got %q", spec, strings.Join(Splits, ", "), split)
	}
	return path, split, nil
}

// WithSplit returns path with the selection "#split=split" appended (path
// itself when split is empty).
func WithSplit(path, split string) string {
	if split == "" {
		return path
	}
	return path + splitSuffix + split
}

// ReadSpec reads a dataset given as "file.jsonl" or "file.jsonl#split=NAME".
// A selection keeps only the records whose "split" field is NAME, and is an
// error when none is. Without one every record is returned, whatever its
// split.
func ReadSpec(spec string) ([]Record, error) {
	path, split, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	recs, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	if split == "" {
		return recs, nil
	}
	return SelectSplit(recs, path, split)
}

// ReadTraining reads a dataset a training run uses; key is its config key
// (data.train, data.val or data.test). split, from the config's
// data.*_split key, selects records by their "split" field, as a
// "#split=NAME" suffix on spec does (the two must agree when both are
// given). Without a selection, a file whose records carry a "split" field
// must hold the key's own split only (train for data.train, validation for
// data.val, test for data.test: what `train data synth` writes); a file
// mixing splits, or holding another one, is an error naming the field,
// since training on it would leak its validation or test records.
func ReadTraining(spec, split, key string) ([]Record, error) {
	path, pathSplit, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	if pathSplit != "" && split != "" && pathSplit != split {
		return nil, fmt.Errorf("data: %s selects split %q but %s_split is %q: give one", spec, pathSplit, key, split)
	}
	if split == "" {
		split = pathSplit
	}
	recs, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	if split != "" {
		return SelectSplit(recs, path, split)
	}
	own := keySplit[key]
	for _, r := range recs {
		if r.Split != own || own == "" && r.Split != "" {
			if counts := splitCounts(recs); counts != "" {
				return nil, &Error{File: path, Field: "split", Msg: fmt.Sprintf(
					"the records carry a \"split\" field (%s) but no split is selected for %s, so it would use every one: "+
						"set %s_split (train, validation or test) or write the path as %s#split=NAME", counts, key, key, path)}
			}
			break
		}
	}
	return recs, nil
}

// keySplit is the split a training config key's file may hold without a
// selection.
var keySplit = map[string]string{"data.train": "train", "data.val": "validation", "data.test": "test"}

// SelectSplit keeps the records of recs whose Split is split; none is an
// error naming path.
func SelectSplit(recs []Record, path, split string) ([]Record, error) {
	var out []Record
	for _, r := range recs {
		if r.Split == split {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		have := splitCounts(recs)
		if have == "" {
			have = "no record has a \"split\" field"
		}
		return nil, &Error{File: path, Field: "split", Msg: fmt.Sprintf("no record has split %q (%s); `train data split` assigns splits", split, have)}
	}
	return out, nil
}

// splitCounts describes how many records carry each split ("" when no
// record carries one).
func splitCounts(recs []Record) string {
	n := map[string]int{}
	for _, r := range recs {
		n[r.Split]++
	}
	var parts []string
	for _, s := range Splits {
		if n[s] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", s, n[s]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	if n[""] > 0 {
		parts = append(parts, fmt.Sprintf("none %d", n[""]))
	}
	return strings.Join(parts, ", ")
}
