//go:build !amd64 || purego

package sgemm

// available: no assembly microkernels on this architecture or with
// -tags purego (kernels then uses gonum's pure-Go sgemm).
func available() []*Kernel { return nil }

// availableDot: no bf16 dot-product kernels here.
func availableDot() []*DotKernel { return nil }

// Peak: no assembly loops here.
func Peak(bf16 bool, n int) int64 { return 0 }
