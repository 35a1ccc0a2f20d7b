//go:build argrl_mpi

// NCCL through dlopen (see argrl_nccl.h). Signatures as in nccl.h since
// NCCL 2.7 (ncclSend/ncclRecv); enum arguments travel as int.

#include <dlfcn.h>
#include "argrl_nccl.h"

enum { nccl_float32 = 7 }; // ncclFloat32 in ncclDataType_t

static struct {
	int (*get_version)(int*);
	int (*get_unique_id)(argrl_nccl_id*);
	int (*init_rank)(argrl_nccl_comm*, int, argrl_nccl_id, int);
	int (*send)(const void*, size_t, int, int, argrl_nccl_comm, void*);
	int (*recv)(void*, size_t, int, int, argrl_nccl_comm, void*);
	int (*bcast)(const void*, void*, size_t, int, int, argrl_nccl_comm, void*);
	int (*group_start)(void);
	int (*group_end)(void);
	int (*async_error)(argrl_nccl_comm, int*);
	int (*destroy)(argrl_nccl_comm);
	int (*abort)(argrl_nccl_comm);
	const char* (*error_string)(int);
} nccl;

#define ARGRL_SYM(field, name)                                        \
	do {                                                              \
		*(void**)(&nccl.field) = dlsym(h, name);                      \
		if (nccl.field == NULL) return "no symbol " name " (NCCL older than 2.7?)"; \
	} while (0)

const char* argrl_nccl_load(const char* lib, int* version) {
	void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char* e = dlerror();
		return e ? e : "dlopen failed";
	}
	ARGRL_SYM(get_version, "ncclGetVersion");
	ARGRL_SYM(get_unique_id, "ncclGetUniqueId");
	ARGRL_SYM(init_rank, "ncclCommInitRank");
	ARGRL_SYM(send, "ncclSend");
	ARGRL_SYM(recv, "ncclRecv");
	ARGRL_SYM(bcast, "ncclBroadcast");
	ARGRL_SYM(group_start, "ncclGroupStart");
	ARGRL_SYM(group_end, "ncclGroupEnd");
	ARGRL_SYM(async_error, "ncclCommGetAsyncError");
	ARGRL_SYM(destroy, "ncclCommDestroy");
	ARGRL_SYM(abort, "ncclCommAbort");
	ARGRL_SYM(error_string, "ncclGetErrorString");
	*version = 0;
	if (nccl.get_version(version) != 0) return "ncclGetVersion failed";
	return NULL;
}

int argrl_nccl_get_unique_id(argrl_nccl_id* id) { return nccl.get_unique_id(id); }

int argrl_nccl_init_rank(argrl_nccl_comm* comm, int nranks, const argrl_nccl_id* id, int rank) {
	return nccl.init_rank(comm, nranks, *id, rank);
}

int argrl_nccl_send(unsigned long long buf, size_t n, int peer, argrl_nccl_comm comm, void* stream) {
	return nccl.send((const void*)buf, n, nccl_float32, peer, comm, stream);
}

int argrl_nccl_recv(unsigned long long buf, size_t n, int peer, argrl_nccl_comm comm, void* stream) {
	return nccl.recv((void*)buf, n, nccl_float32, peer, comm, stream);
}

int argrl_nccl_bcast(unsigned long long buf, size_t n, int root, argrl_nccl_comm comm, void* stream) {
	return nccl.bcast((const void*)buf, (void*)buf, n, nccl_float32, root, comm, stream);
}

int argrl_nccl_group_start(void) { return nccl.group_start(); }
int argrl_nccl_group_end(void) { return nccl.group_end(); }
int argrl_nccl_async_error(argrl_nccl_comm comm, int* result) { return nccl.async_error(comm, result); }
int argrl_nccl_destroy(argrl_nccl_comm comm) { return nccl.destroy(comm); }
int argrl_nccl_abort(argrl_nccl_comm comm) { return nccl.abort(comm); }

const char* argrl_nccl_error_string(int result) {
	const char* s = nccl.error_string ? nccl.error_string(result) : NULL;
	return s ? s : "unknown NCCL error";
}
