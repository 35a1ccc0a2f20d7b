// Package metrics is what a run logs and how it is shown: RUN/metrics.jsonl
// (this file), the NaN guard, the console progress line (progress.go), the
// rollout samples of RL runs (rollouts.go), and `train plot`: the PNG
// curves (plot.go) and the offline run report RUN/report.html (report.go),
// also served live (serve.go).
//
// RUN/metrics.jsonl: one JSON object per line, one line per optimizer step
// (kind "train") and per evaluation (kind "eval"):
//
//	{"step":12,"kind":"train","epoch":0,"grad_norm":0.83,"loss":1.2,"lr":0.0001,"tokens_per_s":5120}
//	{"step":50,"kind":"eval","aca":0.7,"alc":0.6,"fcm":0.5,"tid":0.9,"tsa":0.8}
//
// "step" and "kind" come first, the other keys sorted, numbers in Go's
// shortest round-trip form, non-finite values as null. Each line is one
// write(2) on an O_APPEND file, so a reader or a kill sees whole lines
// (at worst a torn last line after a crash mid-write).
//
// Key names the plots know (the report shows every other key too): loss,
// lr, grad_norm, tokens_per_s, epoch; eval: tid, tsa, aca, alc, fcm,
// exact_match, name_acc, arg_score, loss, and per language tid.<lang> …
// fcm.<lang>; RL (trainer/rl/stats.go): reward_mean, reward_min,
// reward_max, reward_<part>, rate_tid … rate_fcm, kl, entropy, clip_frac,
// resp_len, resp_len_max, the *_tokens_per_s and time_*_s keys.
//
// Resume: Open(path, S) cuts the file before the first line with
// step > S (and a torn last line), so after the rerun of steps S+1… the
// file holds the lines an uninterrupted run writes. Recipes therefore log
// a step's train and eval lines before that step's checkpoint, and Sync the
// log before saving it.
package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
)

// File is the metrics log's name inside RUN/.
const File = "metrics.jsonl"

// Metrics are one line's numeric values, by key.
type Metrics map[string]float64

// Writer appends lines to RUN/metrics.jsonl.
type Writer struct {
	f    *os.File
	path string
}

// Open opens the log at path for appending. resumeStep < 0 starts a
// fresh log (an existing file is emptied); otherwise lines after step
// resumeStep are cut off, as described in the file header.
func Open(path string, resumeStep int) (*Writer, error) {
	if resumeStep < 0 {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o666)
		if err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
		return &Writer{f: f, path: path}, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	cut, err := resumeCut(path, raw, resumeStep)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	if cut < int64(len(raw)) {
		if err := f.Truncate(cut); err != nil {
			return nil, errors.Join(fmt.Errorf("metrics: truncate %s: %w", path, err), f.Close())
		}
		if err := f.Sync(); err != nil {
			return nil, errors.Join(fmt.Errorf("metrics: %w", err), f.Close())
		}
	}
	return &Writer{f: f, path: path}, nil
}

// resumeCut returns the byte offset at which the log is cut for a resume
// from step s.
func resumeCut(path string, raw []byte, s int) (int64, error) {
	off := 0
	for line := 1; off < len(raw); line++ {
		n := bytes.IndexByte(raw[off:], '\n')
		if n < 0 { // torn last line
			return int64(off), nil
		}
		rec, err := parseMetricsLine(raw[off : off+n])
		if err != nil {
			if off+n+1 == len(raw) { // a garbled final line: a torn write
				return int64(off), nil
			}
			return 0, fmt.Errorf("metrics: %s:%d: %w", path, line, err)
		}
		if rec.Step > s {
			return int64(off), nil
		}
		off += n + 1
	}
	return int64(off), nil
}

// Log appends one line.
func (l *Writer) Log(kind string, step int, m Metrics) error {
	b, err := encodeMetricsLine(kind, step, m)
	if err != nil {
		return fmt.Errorf("metrics: %s: %w", l.path, err)
	}
	if _, err := l.f.Write(b); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

// Sync flushes the log to stable storage (call before a checkpoint).
func (l *Writer) Sync() error {
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

// Close closes the log.
func (l *Writer) Close() error { return l.f.Close() }

func encodeMetricsLine(kind string, step int, m Metrics) ([]byte, error) {
	var b bytes.Buffer
	kj, err := json.Marshal(kind)
	if err != nil {
		return nil, fmt.Errorf("metric kind %q: %w", kind, err)
	}
	fmt.Fprintf(&b, `{"step":%d,"kind":%s`, step, kj)
	keys := make([]string, 0, len(m))
	for k := range m {
		if k == "step" || k == "kind" || k == "" {
			return nil, fmt.Errorf("metric key %q is reserved", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kj, err := json.Marshal(k)
		if err != nil {
			return nil, fmt.Errorf("metric key %q: %w", k, err)
		}
		b.WriteByte(',')
		b.Write(kj)
		b.WriteByte(':')
		if v := m[k]; math.IsNaN(v) || math.IsInf(v, 0) {
			b.WriteString("null")
		} else {
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// Record is one parsed line. Null values are absent from Values.
type Record struct {
	Line   int
	Step   int
	Kind   string
	Values Metrics
}

func parseMetricsLine(line []byte) (Record, error) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&raw); err != nil {
		return Record{}, fmt.Errorf("not a JSON object: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Record{}, errors.New("trailing data after the JSON object")
	}
	if raw == nil {
		return Record{}, errors.New("not a JSON object")
	}
	r := Record{Values: Metrics{}}
	if err := json.Unmarshal(raw["step"], &r.Step); err != nil || raw["step"] == nil {
		return r, errors.New(`key "step": want an integer`)
	}
	if err := json.Unmarshal(raw["kind"], &r.Kind); err != nil || r.Kind == "" {
		return r, errors.New(`key "kind": want a non-empty string`)
	}
	for k, v := range raw {
		if k == "step" || k == "kind" || string(v) == "null" {
			continue
		}
		var f float64
		if err := json.Unmarshal(v, &f); err != nil {
			return r, fmt.Errorf("key %q: want a number or null, got %s", k, v)
		}
		r.Values[k] = f
	}
	return r, nil
}

// Read parses a metrics log; a malformed line is an error naming
// file:line.
func Read(path string) ([]Record, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	var out []Record
	for line, off := 1, 0; off < len(raw); line++ {
		n := bytes.IndexByte(raw[off:], '\n')
		if n < 0 {
			n = len(raw) - off
		}
		text := bytes.TrimSpace(raw[off : off+n])
		off += n + 1
		if len(text) == 0 {
			continue
		}
		rec, err := parseMetricsLine(text)
		if err != nil {
			return nil, fmt.Errorf("metrics: %s:%d: %w", path, line, err)
		}
		rec.Line = line
		out = append(out, rec)
	}
	return out, nil
}

// NonFiniteError stops a run whose loss or grad norm is NaN or infinite.
type NonFiniteError struct {
	Step     int
	Key      string
	Value    float64
	LastGood string // newest complete checkpoint ("" if none)
}

func (e *NonFiniteError) Error() string {
	keep := "no checkpoint was written yet"
	if e.LastGood != "" {
		keep = "the last good checkpoint " + e.LastGood + " is kept; resume from it with --resume (perhaps with a lower optim.lr)"
	}
	return fmt.Sprintf("step %d: %s is %v: stopping without applying this update or writing a checkpoint; %s", e.Step, e.Key, e.Value, keep)
}

// CheckFinite returns a *NonFiniteError for the first of keys (all keys of
// m, sorted, when none are given) whose value is NaN or ±Inf. The caller
// checks before the optimizer step and before any checkpoint, so the last
// good checkpoint stays `latest`.
func CheckFinite(step int, m Metrics, lastGood string, keys ...string) error {
	if len(keys) == 0 {
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
	}
	for _, k := range keys {
		v, ok := m[k]
		if ok && (math.IsNaN(v) || math.IsInf(v, 0)) {
			return &NonFiniteError{Step: step, Key: k, Value: v, LastGood: lastGood}
		}
	}
	return nil
}
