# argrl — see README.md. Every target runs on a CPU-only machine.
GO      ?= go
BIN     ?= bin
export CGO_ENABLED ?= 1

.PHONY: build test test-long bench deps-bench demo demo-base cuda cuda-check train-cuda gpu-check fixtures fuzz vet clean

build:
	CGO_ENABLED=0 $(GO) build -o $(BIN)/train ./cmd/train

vet:
	$(GO) vet ./...

# The README's test command: vet + every unit test, no GPU, no Python.
test: vet
	$(GO) test ./...

# Long tests: GRPO/PPO learn a synthetic task; a random 7B-shaped bf16
# checkpoint (15 GB, generated, never committed) scores within 1.2x its size
# in resident memory. Skipped unless ARGRL_LONG is set.
test-long:
	ARGRL_LONG=1 $(GO) test -run Long -timeout 60m ./...

# Benchmarks print ratios against a reference measured in the same run;
# figures are recorded in BENCHMARKS.md. The programs and scripts live in
# bench/ (one folder per benchmark); Go benchmark functions sit next to the
# code they time. Installs OpenBLAS when missing.
bench: deps-bench
	go run ./bench/peak
	sh bench/kernels/bench.sh
	$(GO) test ./kernels/graph/ -run '^$$' -bench DecoderBlock -benchtime 5x
	CGO_LDFLAGS=-lopenblas $(GO) test -tags openblas ./kernels/graph/ -run '^$$' -bench DecoderBlock -benchtime 5x
	node bench/tokenizer/bench.mjs --model qwen3
	node bench/tokenizer/bench.mjs --model llama3
	sh bench/sft/sft_bench.sh
	sh bench/sft/recompute.sh
	sh bench/rollout/bench.sh
	$(GO) test ./trainer/ -run '^$$' -bench GRPOStep -benchtime 2x -timeout 60m
	ARGRL_LONG=1 $(GO) test ./model/ -run '^TestLongScaleRSS$$' -v -timeout 30m | grep -E 'scale:|^(ok|FAIL|---)'

deps-bench:
	@ldconfig -p | grep -q libopenblas || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libopenblas-dev)
	@/usr/bin/python3 -c 'import torch' 2>/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch)

# Paper 000 in miniature on a CPU (README.md, "The demo"): benchmark,
# base-model evaluation, LoRA SFT, GRPO (RM-3, β = 3), tables and curves.
demo:
	GO=$(GO) configs/demo/demo.sh

# Regenerate configs/demo/base-model: tiny qwen2 trained from scratch by argrl.
demo-base:
	GO=$(GO) configs/demo/demo-base.sh

# The CUDA backend builds with -tags argrl_cuda (Gorgonia's own "cuda" tag
# pulls in cuDNN, which we never use). No GPU is needed to build or to run
# the emulated kernel tests; a tagged binary needs one to start.
CUDA_TAGS ?= argrl_cuda

# Regenerate the PTX (nvcc sm_80, JIT-compiled by the driver on newer GPUs),
# validate it with ptxas, vet and build with the GPU backend.
cuda:
	kernels/cuda/gen.sh
	$(GO) vet -tags $(CUDA_TAGS) ./...
	$(GO) build -tags $(CUDA_TAGS) ./...

# CI: the committed PTX must equal a fresh build of the sources.
cuda-check:
	kernels/cuda/gen.sh --check
	$(GO) vet -tags $(CUDA_TAGS) ./...
	$(GO) build -tags $(CUDA_TAGS) ./...

train-cuda:
	$(GO) build -tags $(CUDA_TAGS) -o $(BIN)/train-cuda ./cmd/train

# One prepared script for a machine with a GPU (fits in 10 minutes).
gpu-check:
	kernels/cuda/gpu-check.sh

# PyTorch oracles (Debian python3-torch under /usr/bin/python3); the outputs
# are committed so that make test never needs Python.
fixtures:
	/usr/bin/python3 testdata/make_fixtures.py
	/usr/bin/python3 kernels/testdata/gen_torch_ref.py

# Each parser's fuzz target for 60 s (docs/contracts.md §2: parsers never panic).
fuzz:
	$(GO) test ./data/format -run '^$$' -fuzz '^FuzzToolCall$$' -fuzztime 60s
	$(GO) test ./data/format -run '^$$' -fuzz '^FuzzPythonic$$' -fuzztime 60s
	$(GO) test ./data/format -run '^$$' -fuzz '^FuzzReasonTool$$' -fuzztime 60s

clean:
	rm -rf $(BIN)
