package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
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
	fs.StringVar(&r.Status, "status", "FAIL", "ok, FAIL, skipped or \"not built yet\"")
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

// gpucheck table F.json...: every file's rows in order, one table; it
// fails when a row is FAIL or a file cannot be read (which is a row too).
func runTable(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: gpucheck table F.json...")
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
	failed := printTable(os.Stdout, rows)
	if failed > 0 {
		return fmt.Errorf("%d of %d checks failed", failed, len(rows))
	}
	return nil
}

// printTable writes rows as aligned columns and returns the FAIL count.
func printTable(w io.Writer, rows []Row) int {
	head := Row{Check: "check", Value: "result", Status: "status", Detail: "detail"}
	width := [3]int{}
	for _, r := range append([]Row{head}, rows...) {
		width[0] = max(width[0], len([]rune(r.Check)))
		width[1] = max(width[1], len([]rune(r.Value)))
		width[2] = max(width[2], len([]rune(r.Status)))
	}
	line := func(r Row) {
		fmt.Fprintf(w, "%s  %s  %s  %s\n", pad(r.Check, width[0]), pad(r.Value, width[1]), pad(r.Status, width[2]), r.Detail)
	}
	line(head)
	fmt.Fprintln(w, strings.Repeat("-", width[0]+width[1]+width[2]+6+len("detail")))
	failed := 0
	for _, r := range rows {
		line(r)
		if r.Status == "FAIL" {
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
