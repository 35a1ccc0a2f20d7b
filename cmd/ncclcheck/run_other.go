//go:build !(argrl_cuda && argrl_mpi)

package main

import "errors"

func run() error {
	return errors.New("built without NCCL support: go build -tags argrl_cuda,argrl_mpi ./cmd/ncclcheck")
}
