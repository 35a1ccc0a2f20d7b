// Command bench measures tokenizer throughput on one core: every non-empty
// line of a text file is encoded (without special tokens), pass after pass,
// for at least -seconds. It prints one JSON line per implementation:
//
//	{"impl":"argrl","tokens_per_pass":N,"passes":P,"seconds":S,"tokens_per_s":X,"cold_tokens_per_s":C}
//
// cold_tokens_per_s is the first pass alone (empty BPE cache). With -sugarme
// it also times github.com/sugarme/tokenizer on the same lines, for the
// record: that library cannot split with Qwen's or Llama-3's pattern, so its
// ids are wrong; only its speed is reported, and a failure to load is printed
// as {"impl":"sugarme","error":...}.
//
// Run by bench.mjs beside this file, next to the JS tokenizer on the same text.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/argrl/argrl/model/tokenizer"
	sugar "github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/pretrained"
)

type result struct {
	Impl           string  `json:"impl"`
	TokensPerPass  int     `json:"tokens_per_pass,omitempty"`
	Passes         int     `json:"passes,omitempty"`
	Seconds        float64 `json:"seconds,omitempty"`
	TokensPerS     float64 `json:"tokens_per_s,omitempty"`
	ColdTokensPerS float64 `json:"cold_tokens_per_s,omitempty"`
	Error          string  `json:"error,omitempty"`
}

// timeIt runs pass until at least minSec have gone by.
func timeIt(impl string, minSec float64, pass func() (int, error)) result {
	start := time.Now()
	n, err := pass()
	if err != nil {
		return result{Impl: impl, Error: err.Error()}
	}
	cold := time.Since(start).Seconds()
	passes := 1
	for time.Since(start).Seconds() < minSec {
		if _, err := pass(); err != nil {
			return result{Impl: impl, Error: err.Error()}
		}
		passes++
	}
	sec := time.Since(start).Seconds()
	return result{Impl: impl, TokensPerPass: n, Passes: passes, Seconds: sec,
		TokensPerS: float64(n*passes) / sec, ColdTokensPerS: float64(n) / cold}
}

func main() {
	tokPath := flag.String("tokenizer", "", "tokenizer.json or model directory")
	textPath := flag.String("text", "", "text file; each non-empty line is encoded")
	minSec := flag.Float64("seconds", 3, "minimum seconds per implementation")
	withSugar := flag.Bool("sugarme", false, "also time github.com/sugarme/tokenizer")
	flag.Parse()
	runtime.GOMAXPROCS(1)
	if err := run(*tokPath, *textPath, *minSec, *withSugar); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(tokPath, textPath string, minSec float64, withSugar bool) error {
	b, err := os.ReadFile(textPath)
	if err != nil {
		return err
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	tok, err := tokenizer.Load(tokPath)
	if err != nil {
		return err
	}
	runtime.GC() // collect Load's garbage so it is not charged to the first pass
	enc := json.NewEncoder(os.Stdout)
	r := timeIt("argrl", minSec, func() (int, error) {
		n := 0
		for _, l := range lines {
			ids, _ := tok.Encode(l, false)
			n += len(ids)
		}
		return n, nil
	})
	if err := enc.Encode(r); err != nil {
		return err
	}
	if withSugar {
		if err := enc.Encode(sugarme(tok.File(), lines, minSec)); err != nil {
			return err
		}
	}
	return nil
}

// sugarme times github.com/sugarme/tokenizer; any failure, a panic inside
// the library included, becomes the result's error.
func sugarme(file string, lines []string, minSec float64) (r result) {
	defer func() {
		if p := recover(); p != nil {
			r = result{Impl: "sugarme", Error: fmt.Sprintf("panic: %v", p)}
		}
	}()
	tk, err := pretrained.FromFile(filepath.Clean(file))
	if err != nil {
		return result{Impl: "sugarme", Error: err.Error()}
	}
	return timeIt("sugarme", minSec, func() (int, error) {
		n := 0
		for _, l := range lines {
			e, err := tk.Encode(sugar.NewSingleEncodeInput(sugar.NewInputSequence(l)), false)
			if err != nil {
				return 0, err
			}
			n += len(e.Ids)
		}
		return n, nil
	})
}
