// The C side of package dist's NCCL loader (nccl.c): libnccl.so.2 is
// opened at run time, so the few NCCL types and functions used are
// declared here rather than taken from nccl.h. Functions return an
// ncclResult_t (0 is ncclSuccess) unless noted; streams are cudaStream_t,
// which is CUstream, passed as void*.
#ifndef ARGRL_NCCL_H
#define ARGRL_NCCL_H

#include <stddef.h>

// ncclUniqueId: NCCL_UNIQUE_ID_BYTES (128) opaque bytes.
typedef struct { char internal[128]; } argrl_nccl_id;
// ncclComm_t: an opaque pointer.
typedef void* argrl_nccl_comm;

// argrl_nccl_load opens lib and resolves the symbols: NULL on success,
// else a message (dlerror's, or a missing symbol's name), valid until the
// next call. *version is ncclGetVersion's code.
const char* argrl_nccl_load(const char* lib, int* version);
int argrl_nccl_get_unique_id(argrl_nccl_id* id);
int argrl_nccl_init_rank(argrl_nccl_comm* comm, int nranks, const argrl_nccl_id* id, int rank);
// Float32 point-to-point and in-place broadcast of n elements at device
// address buf.
int argrl_nccl_send(unsigned long long buf, size_t n, int peer, argrl_nccl_comm comm, void* stream);
int argrl_nccl_recv(unsigned long long buf, size_t n, int peer, argrl_nccl_comm comm, void* stream);
int argrl_nccl_bcast(unsigned long long buf, size_t n, int root, argrl_nccl_comm comm, void* stream);
int argrl_nccl_group_start(void);
int argrl_nccl_group_end(void);
int argrl_nccl_async_error(argrl_nccl_comm comm, int* result);
int argrl_nccl_destroy(argrl_nccl_comm comm);
int argrl_nccl_abort(argrl_nccl_comm comm);
const char* argrl_nccl_error_string(int result); // never NULL

#endif
