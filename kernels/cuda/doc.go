// Package cuda is argrl's GPU backend: kernels.Backend on NVIDIA GPUs
// (compute capability ≥ 8.0) through gorgonia.org/cu (driver API) and
// cuBLAS, plus a CPU emulator that runs the very same kernels in tests.
//
// # Layout
//
//	*.cu, common.cuh      the kernels (CUDA C), one file per op family; each
//	                      names the kernels.Ref* loop it implements
//	ptx/sm_80             PTX from gen.sh (make cuda), committed, embedded
//	                      by the GPU build and JIT-compiled by the driver
//	                      for the GPU at hand (Ampere, Hopper) as cu
//	                      modules; ptx/SOURCES records the digest of the
//	                      sources
//	backend.go, ops_*.go  the Backend: argument checks, launch shapes,
//	matmul.go, pool.go    row-major → cuBLAS mapping, caching allocator —
//	                      all written against the small `device` interface
//	device_cuda.go        the GPU device (build tag argrl_cuda)
//	emu/, emu.go          the emulated device: emu/cuda_emu.h makes the .cu
//	                      sources compile with g++ (threads are fibers that
//	                      switch at __syncthreads and warp shuffles); the
//	                      result runs in a child process driven by emu.go
//	gen.sh, gpu-check.sh  make cuda / make gpu-check
//
// The GPU code is built only with -tags argrl_cuda (not "cuda": that tag
// switches on Gorgonia's own CUDA mode, which does not build). Without it
// the package still builds (New returns an error) and its tests run the
// kernels on the emulator, so `go test ./...` checks every kernel, forward
// and backward, against the float64 references without a GPU.
//
// # Execution model
//
// One non-blocking stream carries every kernel, copy and cuBLAS call, in
// issue order; the host only waits in CopyOut, Sample (ids come back) and
// Sync. Host↔device traffic is limited to the edges: weights and batches
// in, token ids, metrics and checkpoints out (integer side inputs such as
// token ids and positions, a few KB, go up with each op). Device memory
// comes from a caching pool (size classes of 512 B up to 1 MiB, 2 MiB
// above); since the stream orders all work, a block freed by the host can
// be reused by the next op at once. Weights are stored bf16; all arithmetic
// is float32. A MatMul whose B operand is bf16 either widens it into f32
// scratch (default, bit-faithful to the CPU backend) or, with
// Options.BF16TensorCores (backend "cuda-bf16tc"), rounds the activations
// to bf16 and runs a bf16 tensor-core GEMM with f32 accumulation — the mode
// for real training and rollouts (widening re-reads every weight as f32 on
// every decode step). LoRA parameters, gradients and AdamW state are f32.
//
// Kernels: RMSNorm (block per row, deterministic two-pass dw), RoPE,
// flash attention (K/V tiles of 32 keys through shared memory, online
// softmax, a block holds up to 16 (query, head) rows of one KV group so
// decoding reuses each tile across the G query heads; backward recomputes
// P from lse, dq per query block and dk/dv per key block without atomics),
// KV-cache write, SwiGLU, fused log-softmax/gather/entropy (one pass per
// row) and its backward, embedding gather and atomicAdd scatter, AXPBY,
// Mul, AddBias, SumRows, Dot (two-pass), dropout (kernels.DropoutUniform's
// hash), AdamW, and sampling (temperature, top-k, top-p; exact integer
// radix select over (logit, id) keys with fixed-point probabilities, so it
// needs no sort and no V-sized scratch and is deterministic). Head dim
// D ≤ 128.
//
// # Memory plan: Qwen2.5-7B, LoRA r = 32, GRPO with G = 8, one H200
//
// Shapes: C = 3584, 28 layers, 28 query / 4 KV heads, D = 128,
// F = 18944, V = 152064 (untied head): 7.62 B parameters. Sequences are a
// prompt of at most 1,024 tokens (tool schemas included) plus a 512-token
// response, T = 1,536. The H200 has 141 GB (≈ 140 GiB usable). GiB below.
//
//	base weights, bf16 (7,615,616,512 × 2 B)                         14.2
//	LoRA on q,k,v,o,gate,up,down: r·(in+out) per matrix
//	  = 2,883,584 per layer, 80.7 M in all; f32 param + grad
//	  + AdamW m, v = 16 B each                                         1.2
//	rollout KV cache, f32: 2·28·4·128·4 B = 112 KiB per token;
//	  16 prompts × G=8 × 1,536 tokens = 196,608 tokens               21.0
//	rollout logits for 128 rows (f32)                                  0.07
//	training activations kept for backward, f32, per token and layer:
//	  x, norm1 out, attention out, residual, norm2 out (5·C),
//	  q, k, v after RoPE (4,608), gate, up, silu·up (3·F), LoRA A·x
//	  (7·r), lse, rstd: 79,614 floats = 311 KiB; × 28 = 8.5 MiB/token;
//	  LoRA dropout masks are regenerated from the counter hash, never
//	  stored; attention keeps no T×T matrix
//	  - micro-batch = one group (8 × 1,536 = 12,288 tokens), no recompute 102.0
//	  - same with per-layer recomputation: layer inputs only
//	    (392 KiB/token, 4.6) + one layer's activations live (3.6)      8.2
//	log-softmax over V, chunked by 1,024 tokens: logits + dlogits
//	  (2 × 1,024 × 152,064 × 4 B); the full 12,288 × V logits would
//	  be 7.0 GiB, twice                                                1.2
//	bf16 → f32 widening scratch for the largest weight (default mode)  0.25
//	transient activation gradients, cuBLAS workspace, pool slack      ≈ 3
//
// Phases do not overlap: the KV cache goes back to the pool before
// training. Peak in the rollout phase: 14.2 + 1.2 + 21.0 ≈ 37 GiB (so 32
// prompts × 8 rollouts, 42 GiB of cache, also fit). Peak in training
// without recomputation, one 8-sequence group per micro-batch:
// 14.2 + 1.2 + 102 + 1.2 + 0.25 + 3 ≈ 122 GiB, which fits with 18 GiB to
// spare; with recomputation (one extra forward: ≈ +50% FLOPs, since the
// frozen base weights get no gradient and backward is ≈ 2× forward) a group costs
// 8.2 GiB, so micro-batches of 4 groups (32 sequences) need ≈ 53 GiB.
// Reference log-probabilities reuse the same weights with LoRA switched off
// (no second copy), and old/reference passes store no activations.
package cuda
