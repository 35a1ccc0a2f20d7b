//go:build !openblas

package kernels

// defaultBLAS is cgo-free: the packed SGEMM with an assembly microkernel
// (sgemm.go, AVX-512 or AVX2+FMA chosen at run time) on amd64, else
// gonum's pure-Go BLAS (other architectures, older CPUs, -tags purego).
// Build with -tags openblas for OpenBLAS (blas_openblas.go).
var defaultBLAS = newGoBLAS()

// blasName: "asm-avx512", "asm-avx2" or "gonum".
var blasName = defaultBLAS.name()

// gemmSplit: the packed SGEMM runs on one goroutine, so the backend splits
// large products; gonum's sgemm parallelizes them itself.
var gemmSplit = defaultBLAS.k != nil

// gemmAlignM, gemmAlignN: split blocks of rows (columns) are multiples of
// the microkernel tile, so only the last block has a partial tile.
var gemmAlignM, gemmAlignN = defaultBLAS.align()

// setBLASThreads is a no-op without OpenBLAS.
func setBLASThreads(int) {}
