# argrl — see README.md. Every target runs on a CPU-only machine.
GO      ?= go
BIN     ?= bin
export CGO_ENABLED ?= 1

.PHONY: build test lint test-long bench deps-bench demo reproduce reproduce-001 reproduce-r2if demo-base cuda cuda-check train-cuda gpu-check gpu-check-dry-run gpu-check-build fixtures fuzz vet clean
.PHONY: build-mpi train-cuda-mpi test-mpi nccl-vet nccl-check

build:
	CGO_ENABLED=0 $(GO) build -o $(BIN)/train ./cmd/train

vet:
	$(GO) vet ./...

# The README's test command: vet, the linter + every unit test, no GPU,
# no Python.
# (-timeout 30m: cmd/gpucheck's dry run of make gpu-check takes about 8
# minutes on 2 busy cores, near go test's default 10-minute limit.)
test: vet lint
	$(GO) test -timeout 30m ./...

# errcheck (pinned; installed from the Go module proxy into .cache/tools
# on first use): no error is dropped in trainer/, discarded with _ included
# (-blank); .errcheck-excludes lists the log writes it does not count.
ERRCHECK_VERSION ?= v1.30.0
ERRCHECK := $(CURDIR)/.cache/tools/errcheck-$(ERRCHECK_VERSION)/errcheck

lint: $(ERRCHECK)
	$(ERRCHECK) -blank -ignoretests -exclude .errcheck-excludes ./trainer/...

$(ERRCHECK):
	GOBIN=$(dir $(ERRCHECK)) $(GO) install github.com/kisielk/errcheck@$(ERRCHECK_VERSION)

# Long tests: GRPO/PPO learn a synthetic task, multi-turn GRPO learns the
# synthetic dialogues from the demo's base model; a random 7B-shaped bf16
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
	sh bench/engine/bench.sh
	sh bench/serve/bench.sh
	sh bench/pack/bench.sh
	$(GO) test ./trainer/ -run '^$$' -bench GRPOStep -benchtime 2x -timeout 60m
	sh bench/dist/bench.sh
	ARGRL_LONG=1 $(GO) test ./model/ -run '^TestLongScaleRSS$$' -v -timeout 30m | grep -E 'scale:|^(ok|FAIL|---)'

deps-bench:
	@ldconfig -p | grep -q libopenblas || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libopenblas-dev)
	@/usr/bin/python3 -c 'import torch' 2>/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch)

# Paper 000 in miniature on a CPU (README.md, "The demo"): benchmark,
# base-model evaluation, LoRA SFT, GRPO (RM-3, β = 3), tables and curves.
demo:
	GO=$(GO) configs/demo/demo.sh

# Paper 000's experiments on three benchmark draws (README.md, "make
# reproduce"): Tables 2-8 and a Table 3 analogue as mean ± sd beside the
# paper's numbers, the claims checked strictly, runs/reproduce/claims.json
# and bar charts. 45 minutes on 2 cores (README: "The protocol now").
reproduce:
	GO=$(GO) configs/reproduce/reproduce.sh

# Paper 001 (SFT or RL for tool calling) in miniature on three draws of two
# synthetic corpora, xlam and toolace styles (README.md, "make
# reproduce-001"): LoRA vs full SFT; SFT, GRPO and SFT→GRPO trained on one
# corpus and tested on both; a mixed-data run; runs/reproduce-001/claims.json
# and bar charts.
reproduce-001:
	GO=$(GO) configs/reproduce-001/reproduce.sh

# Papers 002/003 (R2IF) in miniature on three draws (README.md, "make
# reproduce-r2if"): a reason_tool SFT warm start, then GRPO with the R2IF
# composite, the binary reward and the ablations without CER and SMV;
# accuracy, irrelevance rejection and ACE; runs/reproduce-r2if/claims.json.
reproduce-r2if:
	GO=$(GO) configs/reproduce-r2if/reproduce.sh

# Regenerate configs/demo/base-model: tiny qwen2 trained from scratch by argrl.
demo-base:
	GO=$(GO) configs/demo/demo-base.sh

# The CUDA backend builds with -tags argrl_cuda (Gorgonia's own "cuda" tag
# pulls in cuDNN, which we never use). No GPU is needed to build or to run
# the emulated kernel tests; a tagged binary needs one to start.
CUDA_TAGS ?= argrl_cuda

# Regenerate the PTX (nvcc, sm_80 and sm_90, both embedded; the driver
# JIT-compiles the newest one the GPU supports), print ptxas's report of
# every kernel (registers, shared memory, spills, launch bounds; a spill,
# missing bounds or registers x threads > 65,536 fail), vet and build with
# the GPU backend.
cuda:
	kernels/cuda/gen.sh
	$(GO) vet -tags $(CUDA_TAGS) ./...
	$(GO) build -tags $(CUDA_TAGS) ./...

# CI: the committed PTX must equal a fresh build of the sources, and every
# kernel pass ptxas's launch checks at sm_80 and sm_90 (gen.sh prints the
# report); the GPU build vets, builds and links against no CUDA library
# (it finds the driver and cuBLAS at run time, kernels/cuda/cudalib: CUDA
# 11.x-13.x drivers), and starts (kernels/cuda/link-check.sh prints what it
# resolved).
cuda-check: train-cuda
	kernels/cuda/gen.sh --check
	$(GO) vet -tags $(CUDA_TAGS) ./...
	$(GO) build -tags $(CUDA_TAGS) ./...
	kernels/cuda/link-check.sh $(BIN)/train-cuda
	$(GO) test -tags $(CUDA_TAGS) -count=1 -run 'TestDriverReport|TestNewWithoutGPU|TestAutoWithoutGPU|TestPTX|TestLaunchBounds|TestPickArch' ./kernels/cuda/

train-cuda:
	$(GO) build -tags $(CUDA_TAGS) -o $(BIN)/train-cuda ./cmd/train

# One prepared script for a machine with a GPU (420 s at most, every step
# under its own timeout; one summary table, printed last; results in $OUT
# or runs/gpu-check: gpu-check.json, gpu-check.log, summary.txt; big files
# in a temporary folder). The NCCL check runs only with 2 GPUs or more.
# gpu-check-dry-run runs every step on the emulator at tiny shapes (no
# GPU); gpu-check-build writes gpu-bundle/ (ignored; ≤ 40 MiB): the
# stripped binaries, the script, the PTX, the tiny configs and data, for
# a GPU machine without Go (docs/gpu.md gives the device call).
gpu-check:
	BIN=$(BIN) kernels/cuda/gpu-check.sh

gpu-check-dry-run:
	BIN=$(BIN) kernels/cuda/gpu-check.sh --dry-run

gpu-check-build:
	GO=$(GO) kernels/cuda/bundle.sh gpu-bundle

# Data parallelism (package dist): the MPI build links OpenMPI through cgo
# (apt-get install openmpi-bin libopenmpi-dev); the default build stays
# cgo-free without it. The MPI tests start their own ranks with mpirun
# (skipped without it, failing under CI=1).
MPI_TAGS ?= argrl_mpi

build-mpi:
	CGO_ENABLED=1 $(GO) build -tags $(MPI_TAGS) -o $(BIN)/train-mpi ./cmd/train

# MPI and the CUDA backend with NCCL: one rank per GPU (README.md).
train-cuda-mpi:
	CGO_ENABLED=1 $(GO) build -tags $(CUDA_TAGS),$(MPI_TAGS) -o $(BIN)/train-cuda-mpi ./cmd/train

test-mpi:
	CGO_ENABLED=1 $(GO) vet -tags $(MPI_TAGS) ./dist/ ./trainer/... ./cmd/train/
	CGO_ENABLED=1 $(GO) test -tags $(MPI_TAGS) -count=1 ./dist/
	CGO_ENABLED=1 $(GO) test -tags $(MPI_TAGS) -count=1 -run '^TestMPI' -timeout 20m ./cmd/train/

# NCCL in the CUDA build: vets and builds without a GPU or NCCL
# (libnccl.so.2 is opened at run time).
nccl-vet:
	$(GO) vet -tags $(CUDA_TAGS),$(MPI_TAGS) ./...
	$(GO) build -tags $(CUDA_TAGS),$(MPI_TAGS) ./cmd/train ./cmd/ncclcheck

# The NCCL check alone (also gpu-check's last step, with 2 GPUs or more):
# 2 ranks on 2 GPUs.
nccl-check:
	dist/nccl-check.sh

# PyTorch oracles (Debian python3-torch under /usr/bin/python3); the outputs
# are committed so that make test never needs Python.
fixtures:
	/usr/bin/python3 testdata/make_fixtures.py
	/usr/bin/python3 kernels/testdata/gen_torch_ref.py

# Each parser's fuzz target for 60 s (docs/contracts.md §2: parsers never panic),
# and train serve's request decoder and streaming tool-call parser (docs/serve.md).
fuzz:
	$(GO) test ./data/format -run '^$$' -fuzz '^FuzzToolCall$$' -fuzztime 60s
	$(GO) test ./data/format -run '^$$' -fuzz '^FuzzPythonic$$' -fuzztime 60s
	$(GO) test ./data/format -run '^$$' -fuzz '^FuzzReasonTool$$' -fuzztime 60s
	$(GO) test ./serve -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime 60s
	$(GO) test ./serve -run '^$$' -fuzz '^FuzzStreamCalls$$' -fuzztime 60s

clean:
	rm -rf $(BIN)
