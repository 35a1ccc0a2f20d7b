// The C side of package dist's MPI Comm (mpi.c). Every function returns
// an MPI error code (MPI_SUCCESS is 0) unless noted; t is an element type:
// 0 bytes, 1 float, 2 int64.
#ifndef ARGRL_MPI_H
#define ARGRL_MPI_H

#include <mpi.h>

// argrl_init returns -1 when MPI was already initialized.
int argrl_init(int* provided, int* rank, int* size, int* local);
int argrl_finalize(void);
void argrl_abort(int code);
void argrl_error_string(int code, char* buf); // buf: MPI_MAX_ERROR_STRING+1 bytes
int argrl_test(MPI_Request* r, int* done);
int argrl_ibcast(void* buf, int n, int t, int root, MPI_Request* r);
int argrl_iallgather(const void* sb, void* rb, int n, int t, MPI_Request* r);
int argrl_iallgatherv(const void* sb, int sn, void* rb, const int* counts, const int* displs, int t,
                      MPI_Request* r);
int argrl_ialltoallv(const void* sb, const int* sc, const int* sd, void* rb, const int* rc, const int* rd,
                     int t, MPI_Request* r);

#endif
