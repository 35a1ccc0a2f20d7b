package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"math"
	"strings"
)

// gpucheck row -out F -check NAME -status S [-value V] [-detail D]: the
// script's own rows (a step that timed out or failed before writing any,
// the slot of a check that does not exist yet).
func runRow(args []string) error {
	fs := flag.NewFlagSet("row", flag.ContinueOnError)
	out := fs.String("out", "", "JSON file to write (required)")
	var r Row
	fs.StringVar(&r.Check, "check", "", "the check's name (required)")
	fs.StringVar(&r.Status, "status", "FAIL", "ok, FAIL, skipped, note or \"not run\"")
	fs.StringVar(&r.Key, "key", "", "the figure's key in `train plan --json`")
	fs.StringVar(&r.Value, "value", "", "the result")
	fs.StringVar(&r.Detail, "detail", "", "what it means or why it failed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || r.Check == "" || fs.NArg() != 0 {
		return fmt.Errorf("usage: gpucheck row -out F.json -check NAME [-status S] [-value V] [-detail D]")
	}
	return writeRows(*out, r)
}

// gpucheck table [-json F] [-plan P] F.json...: every file's rows in
// order, one table, and with -json all of them in one file; -plan fills
// the predicted column from `train plan --json` output (docs/gpu.md). It
// fails when a row is FAIL or "not run", or a file cannot be read (which
// is a FAIL row too).
func runTable(args []string) error {
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	jsonOut := fs.String("json", "", "write every row to this JSON file")
	plan := fs.String("plan", "", "`train plan --json` output for the predicted column (missing or unreadable: none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	args = fs.Args()
	if len(args) == 0 {
		return fmt.Errorf("usage: gpucheck table [-json F] [-plan P] F.json...")
	}
	var rows []Row
	for _, p := range args {
		b, err := os.ReadFile(p)
		var rs []Row
		if err == nil {
			err = json.Unmarshal(b, &rs)
		}
		if err != nil {
			rs = []Row{{Check: p, Status: "FAIL", Detail: fmt.Sprintf("no result: %v", err)}}
		}
		rows = append(rows, rs...)
	}
	if *plan != "" {
		fillPredicted(rows, *plan)
	}
	if err := writeRows(*jsonOut, rows...); err != nil {
		return err
	}
	failed := printTable(os.Stdout, rows)
	if failed > 0 {
		return fmt.Errorf("%d of %d checks failed", failed, len(rows))
	}
	return nil
}

// fillPredicted sets each keyed row's Predicted from the plan file: a JSON
// object whose "predicted" member (or the object itself) maps keys to a
// number or a string. A missing or unreadable plan fills nothing.
func fillPredicted(rows []Row, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return
	}
	if p, ok := top["predicted"]; ok {
		if json.Unmarshal(p, &top) != nil {
			return
		}
	}
	for i, r := range rows {
		v, ok := top[r.Key]
		if r.Key == "" || !ok {
			continue
		}
		var f float64
		var s string
		if json.Unmarshal(v, &f) == nil {
			rows[i].Predicted = fmt.Sprintf("%.3g", f)
			if math.Abs(f) >= 100 {
				rows[i].Predicted = fmt.Sprintf("%.0f", f)
			}
		} else if json.Unmarshal(v, &s) == nil {
			rows[i].Predicted = s
		}
	}
}

// printTable writes rows as aligned columns and returns the count of FAIL
// and "not run" rows (a partial run does not pass).
func printTable(w io.Writer, rows []Row) int {
	head := Row{Check: "check", Value: "result", Predicted: "predicted", Status: "status", Detail: "detail"}
	width := [4]int{}
	pred := func(r Row) string {
		if r.Predicted == "" {
			return "—"
		}
		return r.Predicted
	}
	for _, r := range append([]Row{head}, rows...) {
		width[0] = max(width[0], len([]rune(r.Check)))
		width[1] = max(width[1], len([]rune(r.Value)))
		width[2] = max(width[2], len([]rune(pred(r))))
		width[3] = max(width[3], len([]rune(r.Status)))
	}
	line := func(r Row) {
		fmt.Fprintf(w, "%s  %s  %s  %s  %s\n", pad(r.Check, width[0]), pad(r.Value, width[1]), pad(pred(r), width[2]),
			pad(r.Status, width[3]), r.Detail)
	}
	line(head)
	fmt.Fprintln(w, strings.Repeat("-", width[0]+width[1]+width[2]+width[3]+8+len("detail")))
	failed := 0
	for _, r := range rows {
		line(r)
		if r.Status == "FAIL" || r.Status == "not run" {
			failed++
		}
	}
	return failed
}

func pad(s string, n int) string {
	if k := n - len([]rune(s)); k > 0 {
		return s + strings.Repeat(" ", k)
	}
	return s
}
