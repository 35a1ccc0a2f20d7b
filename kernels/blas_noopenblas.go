//go:build !openblas

package kernels

// defaultBLAS is cgo-free: the packed SGEMM with an assembly microkernel
// (sgemm.go, AVX-512 or AVX2+FMA chosen at run time) on amd64, else
// gonum's pure-Go BLAS (other architectures, older CPUs, -tags purego).
// Build with -tags openblas for OpenBLAS (blas_openblas.go).
var defaultBLAS = newGoBLAS()

// blasName: "asm-avx512", "asm-avx2" or "gonum".
var blasName = defaultBLAS.name()

// cpuDefault is the CPU backend's matmul in this build (goBLAS.config).
var cpuDefault = defaultBLAS.config()

// setBLASThreads is a no-op without OpenBLAS.
func setBLASThreads(int) {}
