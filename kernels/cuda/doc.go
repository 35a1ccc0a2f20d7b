// Package cuda is argrl's GPU backend: kernels.Backend on NVIDIA GPUs
// (compute capability ≥ 8.0) through the CUDA driver API and cuBLAS, plus
// a CPU emulator that runs the very same kernels in tests and in training
// runs ("cuda-emu").
//
// # Layout
//
//	*.cu, common.cuh      the kernels (CUDA C), one file per op family; each
//	                      names the kernels.Ref* loop it implements
//	tc.cuh                the tensor-core primitives (mma.sync m16n8k16
//	                      bf16, ldmatrix, cp.async): the only inline PTX,
//	                      each with an emulator body (emu/tc_emu.h)
//	attn_tc*.cu           attention on tensor cores (the bf16 modes)
//	ptx/sm_80, ptx/sm_90  PTX from gen.sh (make cuda), committed, both
//	                      embedded by the GPU build; the newest not newer
//	                      than the GPU is JIT-compiled by the driver as
//	                      modules (pickArch); ptx/SOURCES records the
//	                      digest of the sources. Every kernel declares
//	                      __launch_bounds__ as Go launches it; gen.sh
//	                      prints ptxas's registers/smem/spills and fails
//	                      on a spill (docs/gpu.md)
//	backend.go, ops_*.go  the Backend: argument checks, launch shapes,
//	matmul.go, pool.go    row-major → cuBLAS mapping, caching allocator —
//	                      all written against the small `device` interface
//	device_cuda.go        the GPU device (build tag argrl_cuda) over
//	driver_cuda.go,       the driver and cuBLAS entry points of cudrv.h,
//	cudrv.h               resolved at run time (see Drivers)
//	abicheck/, link-check.sh  make cuda-check: cudrv.h against cuda.h, and
//	                      what bin/train-cuda links (objdump, nm) and resolves
//	emu/, emu.go          the emulated device: emu/cuda_emu.h makes the .cu
//	                      sources compile with g++ (threads are fibers that
//	                      switch at __syncthreads and warp collectives; a
//	                      warp reduction is one collective; threads without
//	                      collectives run back to back on one stack); the
//	                      result runs in a child process driven by emu.go
//	register.go, new_*.go the backend names (below)
//	cudalib/              finds the driver, cuBLAS, cuBLASLt and NCCL files
//	                      (pure Go, tested on fake layouts)
//	ceilings.go           copy and bf16 GEMM rates (gpu-check's ceilings)
//	gen.sh, gpu-check.sh  make cuda / make gpu-check (cmd/gpucheck measures);
//	bundle.sh             make gpu-check-build (gpu-bundle/)
//
// The GPU code is built only with -tags argrl_cuda (not "cuda": that tag
// switches on Gorgonia's own CUDA mode, which does not build). Without it
// the package still builds (New returns an error) and its tests run the
// kernels on the emulator, so `go test ./...` checks every kernel, forward
// and backward, against the float64 references without a GPU.
//
// # Backends
//
//	cuda           the GPU, float32 arithmetic; a bf16 weight is widened
//	               into f32 scratch per MatMul (matches the CPU backend to
//	               float32 rounding)
//	cuda-bf16tc    bf16 tensor-core GEMMs for bf16 weights (activations
//	               rounded to bf16 per MatMul, f32 accumulation)
//	cuda-bf16      tensor cores and bf16 activations: training graphs keep
//	               what backward reads in bf16 between the passes
//	               (kernels/graph Config.StashBF16) — the mode for 7B runs
//	cuda-emu       every build: the CUDA backend on the emulator (g++ builds
//	cuda-emu-bf16  it on first use, cached under the user cache directory),
//	               float32, or as cuda-bf16
//
// # Drivers
//
// bin/train-cuda links neither libcuda nor libcublas (its only NEEDED
// library is libc, glibc ≥ 2.34 for a build on this project's Debian 12):
// it opens libcuda.so.1 where package cudalib finds it ($ARGRL_LIBCUDA
// overrides) and asks
// cuGetProcAddress — its CUDA 12 form cuGetProcAddress_v2 where the driver
// has it — for each of the 28 driver entry points in the ABI of CUDA
// 11.8's headers (cuMemAlloc_v2, cuStreamDestroy_v2, …), so toolkits that
// renamed or versioned symbols since (CUDA 12's and 13's `_v2`/`_v3`/`_v4`
// names, which gorgonia.org/cu's callers linked against) do not matter;
// drivers older than 11.3 (no cuGetProcAddress) are served by the
// versioned symbol names. cuBLAS is the first of libcublas.so.13, .12 and
// .11 that cudalib finds and that opens, not newer than the driver's CUDA
// ($ARGRL_LIBCUBLAS overrides), its cuBLASLt opened first. Supported: NVIDIA drivers
// for CUDA 11.x, 12.x and 13.x with any of those cuBLAS versions, on GPUs
// of compute capability 8.0 or newer (Ampere, Ada, Hopper; Blackwell JITs
// the sm_90 PTX too but is untested). Checked here by make cuda-check
// against the CUDA 12.2 driver library Debian ships with the 11.8 toolkit
// (every entry point resolves, then cuInit reports no device); `train
// gpu-info` prints what a binary resolved.
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
// Options.BF16TensorCores ("cuda-bf16tc", "cuda-bf16"), rounds the
// activations to bf16 and runs a bf16 tensor-core GEMM with f32
// accumulation — the mode for real training and rollouts (widening
// re-reads every weight as f32 on every decode step). With
// Options.BF16Activations ("cuda-bf16") training graphs also keep the
// activations backward reads in bf16 between the passes (the memory plan
// below). LoRA parameters, gradients and AdamW state are f32. The pool's
// statistics (MemStats: peak, requests, reuse, device allocations) are
// printed when a run closes the backend.
//
// In the tensor-core modes attention runs on attn_tc.cu/attn_tc_bwd.cu
// (head dims 16, 32, 64, 128; others use the f32 kernels below):
// FlashAttention-2 style on mma.sync with bf16 q, k, v and P, f32
// accumulation and softmax, K/V tiles double-buffered by cp.async; keys in
// fixed 256-key chunks merged in order, so decoding (split along the chunks
// across blocks, flash-decoding, then attn_tc_combine) and training give
// the same bits and ρ − 1 stays exactly 0 (TestRatioExactOnCUDAEmu); the
// decoder's KV cache is bf16 there (kernels.BF16KVCache). LogProbs and its
// backward read bf16 logits (the bf16 stash) in place.
//
// Kernels: RMSNorm (block per row, deterministic two-pass dw; an f32 or
// a bf16 out), RoPE, the decode step's fused bias + RoPE + KV write
// (rope_kv, the same bits as the ops one by one),
// flash attention (K/V tiles of 32 keys through shared memory, online
// softmax, a block holds up to 16 (query, head) rows of one KV group so
// decoding reuses each tile across the G query heads; backward recomputes
// P from lse, dq per query block and dk/dv per key block without atomics),
// KV-cache write, SwiGLU (at a row stride: the fused gate/up layout),
// fused log-softmax/gather/entropy (one pass per row; rows over 4,096
// logits in vocabulary chunks merged in a fixed order) and its backward, embedding gather and atomicAdd scatter, AXPBY,
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
//	training activations kept for backward, per token and layer:
//	  x, norm1 out, attention out, residual, norm2 out (5·C),
//	  q, k, v after RoPE (4,608), gate, up, silu·up (3·F), LoRA A·x
//	  (7·r), lse, rstd: 79,614 floats = 311 KiB in f32; measured ×1.04
//	  (below) = 323 KiB f32, ×0.43 = 134 KiB with bf16 activations;
//	  LoRA dropout masks are regenerated from the counter hash, never
//	  stored; attention keeps no T×T matrix
//	  - micro-batch = one group (8 × 1,536 = 12,288 tokens), f32     106
//	  - the same, bf16 activations ("cuda-bf16")                      44
//	  - per-layer recomputation (layer inputs only, 392 KiB/token,
//	    4.6, + one layer's activations live, 3.6), not built          8.2
//	logits and their gradient over V for the micro-batch, f32: the
//	  training graph does not chunk them (7.0 each at 12,288 tokens);
//	  bf16 activations stash the logits between the passes (3.5)     14
//	bf16 → f32 widening scratch for the largest weight ("cuda" only)   0.25
//	transient activation gradients, cuBLAS workspace, pool slack      ≈ 3
//
// The activation rows are the emulator's measurement (make
// gpu-check-dry-run, `gpucheck memory`), scaled by the formula: the pool's
// peak during one LoRA r = 8 training step of a miniature of this shape
// (C 112, F 592, 7 query heads per KV head, V 1024) at depths 2 and 6, 4 ×
// 64 and 4 × 128 tokens; the difference per added layer is what a layer
// keeps for backward — 10,592 and 10,416 B per token in f32 against the
// formula's 10,152 (2,538 floats): ×1.04; 4,484 and 4,308 B with bf16
// activations: ×0.43, 42% of f32 (statistics such as lse and rstd stay
// f32; the stash frees each float32 activation at its last forward use).
// gpu-check measures the same on the GPU.
//
// Phases do not overlap: the KV cache goes back to the pool before
// training. Peak in the rollout phase: 14.2 + 1.2 + 21.0 ≈ 37 GiB (so 32
// prompts × 8 rollouts, 42 GiB of cache, also fit). Peak in training, one
// 8-sequence group per micro-batch: in f32, 14.2 + 1.2 + 106 + 14 + 0.25 +
// 3 ≈ 139 GiB, at the edge of the card (micro-batches of half a group,
// ≈ 79 GiB, fit); with bf16 activations, 14.2 + 1.2 + 44 + 14 + 3 ≈ 77 GiB,
// which fits with 60 GiB to spare. Recomputation (one extra forward: ≈ +50%
// FLOPs, since the frozen base weights get no gradient and backward is ≈ 2×
// forward) would bring a group to 8.2 GiB, so micro-batches of 4 groups
// (32 sequences); it is not built. Reference log-probabilities reuse the
// same weights with LoRA switched off (no second copy), and old/reference
// passes store no activations.
package cuda
