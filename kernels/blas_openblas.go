//go:build openblas

package kernels

/*
#cgo LDFLAGS: -lopenblas
void openblas_set_num_threads(int);
*/
import "C"

import "gonum.org/v1/netlib/blas/netlib"

// defaultBLAS is OpenBLAS through gonum's netlib cgo bindings. Build with
//
//	go build -tags openblas ./...   (this file links -lopenblas itself;
//	                                 CGO_LDFLAGS=-lopenblas also works)
//
// OpenBLAS is switched to one thread at init: the backend parallelizes
// itself (large matmuls are split into row or column blocks over
// goroutines, attention runs tiles on several goroutines), and OpenBLAS's
// spinning worker threads under concurrent callers oversubscribe the cores
// (measured: attention 3–8× slower with OpenBLAS's own threads).
var defaultBLAS netlib.Implementation

const blasName = "openblas"

// cpuDefault: split large products over goroutines (OpenBLAS runs one
// thread per call) in blocks of multiples of 16 rows/columns; OpenBLAS has
// no bf16 operand, so cpu_matmul.go widens a BF16 B in bounded column
// blocks.
var cpuDefault = cpuBLAS{sgemm: defaultBLAS.Sgemm, split: true, alignM: 16, alignN: 16}

func init() { setBLASThreads(1) }

// setBLASThreads sets OpenBLAS's own thread count (process-wide).
func setBLASThreads(n int) { C.openblas_set_num_threads(C.int(n)) }
