package kernels

// NewCPUWithoutBF16 is NewCPU on a machine without AVX512-BF16: MatMuls
// with BF16 set are float32 products (for the conformance suite).
func NewCPUWithoutBF16() Backend {
	c := newCPU(cpuDefault)
	c.dot = nil
	return c
}
