// Command peak prints this machine's multiply-add peak (kernels.PeakGFLOPS),
// float32 FMA and bf16 dot products, on 1 and on -threads goroutines, as
// one JSON line; the other benchmarks state their figures as shares of it.
//
//	go run ./bench/peak [-threads N] [-seconds 0.5]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/argrl/argrl/kernels"
)

func main() {
	threads := flag.Int("threads", runtime.GOMAXPROCS(0), "goroutines of the many-thread figure")
	secs := flag.Float64("seconds", 0.5, "seconds per run")
	flag.Parse()
	if *threads < 1 || !(*secs > 0) {
		fmt.Fprintln(os.Stderr, "peak: -threads must be ≥ 1 and -seconds > 0")
		os.Exit(1)
	}
	d := time.Duration(*secs * float64(time.Second))
	out := map[string]any{"threads": *threads,
		"f32_1": kernels.PeakGFLOPS(false, 1, d), "bf16_1": kernels.PeakGFLOPS(true, 1, d),
		"f32": kernels.PeakGFLOPS(false, *threads, d), "bf16": kernels.PeakGFLOPS(true, *threads, d)}
	b, err := json.Marshal(out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peak:", err)
		os.Exit(1)
	}
	fmt.Println(string(b))
}
