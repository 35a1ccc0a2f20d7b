//go:build !argrl_mpi

package dist

import "errors"

// MPIAvailable reports whether this binary was built with MPI (-tags
// argrl_mpi).
const MPIAvailable = false

// MPI fails: the binary was built without MPI.
func MPI(opt Options) (Comm, error) {
	return nil, errors.New("dist: this binary was built without MPI; build with -tags argrl_mpi (make build-mpi)")
}
