#!/usr/bin/env bash
# nccl-check.sh (make gpu-check, make nccl-check): NCCL data parallelism on
# a machine with NVIDIA GPUs, one rank per GPU: 2 ranks with 2 GPUs or
# more; with one GPU a single rank, which checks loading NCCL and setting
# up its communicator only (NCCL refuses two ranks on one GPU). Needs Go,
# the CUDA driver and cuBLAS, OpenMPI (installed with apt when missing)
# and libnccl.so.2, which Debian lacks: the machine's own, or pip's
# nvidia-nccl package found through python3. Budget: 5 minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
mkdir -p "$BIN"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if ((gpus == 0)); then
	echo "nccl-check: no usable NVIDIA GPU" >&2
	exit 2
fi
if ! command -v mpirun >/dev/null 2>&1 || ! pkg-config --exists mpi 2>/dev/null; then
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev pkgconf >/dev/null; } ||
		{ echo "nccl-check: cannot install OpenMPI" >&2; exit 1; }
fi
if ! ldconfig -p | grep -q 'libnccl\.so\.2'; then
	if dir=$(python3 -c 'import os, nvidia.nccl as m; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null); then
		export LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	fi
fi
timeout 240 go build -tags argrl_cuda,argrl_mpi -o "$BIN/ncclcheck" ./cmd/ncclcheck || exit 1
np=2
if ((gpus < 2)); then
	np=1
	echo "nccl-check: $gpus GPU: one rank (the 2-rank check needs 2 GPUs)"
fi
timeout 180 mpirun --allow-run-as-root -np $np -x LD_LIBRARY_PATH "$BIN/ncclcheck"
