//go:build argrl_mpi

// The MPI calls of package dist (mpi.go, mpi_ops.go), as small C functions:
// the MPI handles (MPI_COMM_WORLD, MPI_FLOAT, ...) are C globals cgo
// cannot name.

#include "argrl_mpi.h"

// One communicator per process: a duplicate of MPI_COMM_WORLD, so argrl's
// traffic never matches another library's.
static MPI_Comm argrl_comm = MPI_COMM_NULL;

// Element types of the buffers: 0 bytes, 1 float, 2 int64.
static MPI_Datatype argrl_type(int t) {
	switch (t) {
	case 1: return MPI_FLOAT;
	case 2: return MPI_INT64_T;
	default: return MPI_BYTE;
	}
}

int argrl_init(int* provided, int* rank, int* size, int* local) {
	int inited = 0, rc;
	MPI_Initialized(&inited);
	if (inited) return -1;
	rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, provided);
	if (rc != MPI_SUCCESS) return rc;
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &argrl_comm)) != MPI_SUCCESS) return rc;
	MPI_Comm_set_errhandler(argrl_comm, MPI_ERRORS_RETURN);
	MPI_Comm_rank(argrl_comm, rank);
	MPI_Comm_size(argrl_comm, size);
	MPI_Comm node;
	rc = MPI_Comm_split_type(argrl_comm, MPI_COMM_TYPE_SHARED, *rank, MPI_INFO_NULL, &node);
	if (rc != MPI_SUCCESS) return rc;
	MPI_Comm_rank(node, local);
	return MPI_Comm_free(&node);
}

int argrl_finalize(void) {
	MPI_Comm_free(&argrl_comm);
	return MPI_Finalize();
}

void argrl_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

void argrl_error_string(int code, char* buf) {
	int n = 0;
	if (MPI_Error_string(code, buf, &n) != MPI_SUCCESS) n = 0;
	buf[n] = 0;
}

int argrl_test(MPI_Request* r, int* done) { return MPI_Test(r, done, MPI_STATUS_IGNORE); }

int argrl_ibcast(void* buf, int n, int t, int root, MPI_Request* r) {
	return MPI_Ibcast(buf, n, argrl_type(t), root, argrl_comm, r);
}

int argrl_iallgather(const void* sb, void* rb, int n, int t, MPI_Request* r) {
	return MPI_Iallgather(sb, n, argrl_type(t), rb, n, argrl_type(t), argrl_comm, r);
}

// sb == NULL: in place (this rank's part already sits at rb + displs[rank]).
int argrl_iallgatherv(const void* sb, int sn, void* rb, const int* counts, const int* displs,
                      int t, MPI_Request* r) {
	if (sb == NULL)
		return MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb, counts, displs, argrl_type(t), argrl_comm, r);
	return MPI_Iallgatherv(sb, sn, argrl_type(t), rb, counts, displs, argrl_type(t), argrl_comm, r);
}

int argrl_ialltoallv(const void* sb, const int* sc, const int* sd, void* rb, const int* rc,
                     const int* rd, int t, MPI_Request* r) {
	return MPI_Ialltoallv(sb, sc, sd, argrl_type(t), rb, rc, rd, argrl_type(t), argrl_comm, r);
}
