#!/bin/sh
# train serve's load benchmark (bench/serve/main.go says what it measures):
# Qwen2.5-0.5B's shape (random bf16 weights, bench/mkmodel, generated once
# into $ARGRL_CACHE/bench-qwen2.5-0.5b; nothing downloaded or committed),
# the demo's tokenizer (2,048 ids, within the model's vocabulary: the
# prompts are random ids, the tokenizer only decodes), 1, 16 and 64
# concurrent clients. From the repository root (make bench runs it):
#
#   sh bench/serve/bench.sh
#
# Its length on the quiet machine is not measured (on 2026-12-02, with the
# cores shared by eight engineers' builds, it took over an hour; scaled by
# the decode table's quiet rates it should take minutes).
set -eu
CACHE=${ARGRL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/argrl}
Q05=$CACHE/bench-qwen2.5-0.5b
go run ./bench/mkmodel -shape qwen2.5-0.5b -out "$Q05" >&2
GOMAXPROCS=${GOMAXPROCS:-$(nproc)} go run ./bench/serve -model "$Q05" -tokenizer configs/demo/base-model "$@"
