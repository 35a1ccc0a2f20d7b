#!/bin/sh
# Data-parallel step time, 2 ranks vs 1 rank of bin/train-mpi for the same
# global batch, and the all-reduce share of a 2-rank step (bench/dist/main.go
# says how). Needs OpenMPI (apt-get install openmpi-bin libopenmpi-dev). Run
# from the repository root (`make bench` does):
#
#   sh bench/dist/bench.sh [-steps 10] [-cores N]
set -eu
command -v mpirun >/dev/null || { echo "bench/dist: mpirun is missing (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 1; }
make -s build-mpi >&2
go run ./bench/dist "$@"
