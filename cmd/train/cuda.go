//go:build argrl_cuda

package main

// The GPU build (make train-cuda) links the CUDA backend, which registers
// the "cuda" and "cuda-bf16tc" kernels backends (model.backend).
import _ "github.com/argrl/argrl/kernels/cuda"
