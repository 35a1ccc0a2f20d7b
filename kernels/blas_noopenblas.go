//go:build !openblas

package kernels

import "gonum.org/v1/gonum/blas/gonum"

// defaultBLAS is gonum's pure-Go BLAS (build with -tags openblas for
// OpenBLAS, see blas_openblas.go).
var defaultBLAS gonum.Implementation

const blasName = "gonum"

// gemmSplit: gonum's sgemm parallelizes large products itself.
const gemmSplit = false

// setBLASThreads is a no-op without OpenBLAS.
func setBLASThreads(int) {}
