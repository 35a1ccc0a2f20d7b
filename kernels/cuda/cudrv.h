// cudrv.h: the CUDA driver, cuBLAS and cuBLASLt entry points the GPU
// device uses, declared here rather than taken from cuda.h, and resolved at
// run time
// (driver_cuda.go): the binary links neither libcuda nor libcublas, so one
// build starts on CUDA 11.x, 12.x and 13.x drivers with whichever cuBLAS
// the machine has.
//
// Each typedef is the ABI of the entry point as CUDA 11.8's cuda.h /
// cublas_api.h / cublasLt.h declare it (the `_v2` variant where the header maps the
// name to one); cuGetProcAddress is asked for exactly that ABI version
// (ARGRL_CUDA_ABI). abicheck/abicheck.c checks every typedef against the
// toolkit headers (make cuda-check).
#ifndef ARGRL_CUDRV_H
#define ARGRL_CUDRV_H

#include <stddef.h>
#include <stdint.h>

#define ARGRL_CUDA_ABI 11080  // CUDA 11.8

// Handles use cuda.h's struct tags, so that with the headers included the
// types are the very same; enumerations are unsigned int, as GCC makes an
// enum without negative values (cublasGemmAlgo_t has -1: int).
typedef unsigned argrl_CUresult;
typedef int argrl_CUdevice;
typedef unsigned long long argrl_CUdeviceptr;
typedef struct CUctx_st* argrl_CUcontext;
typedef struct CUmod_st* argrl_CUmodule;
typedef struct CUfunc_st* argrl_CUfunction;
typedef struct CUstream_st* argrl_CUstream;
typedef struct CUgraph_st* argrl_CUgraph;
typedef struct CUgraphExec_st* argrl_CUgraphExec;
typedef struct CUgraphNode_st* argrl_CUgraphNode;
typedef struct cublasContext* argrl_cublasHandle_t;
typedef unsigned argrl_cublasStatus;

// The X-macro lists name, return type, parameters and the symbol that
// implements the 11.8 ABI (looked up by dlsym on drivers without
// cuGetProcAddress, before 11.3; abicheck.c checks it is the one cuda.h
// maps the name to).
#define ARGRL_DRIVER_ENTRIES(X)                                                                          \
  X(cuInit, argrl_CUresult, (unsigned flags), cuInit)                                                  \
  X(cuDriverGetVersion, argrl_CUresult, (int* version), cuDriverGetVersion)                            \
  X(cuGetErrorName, argrl_CUresult, (argrl_CUresult e, const char** s), cuGetErrorName)               \
  X(cuGetErrorString, argrl_CUresult, (argrl_CUresult e, const char** s), cuGetErrorString)           \
  X(cuDeviceGetCount, argrl_CUresult, (int* n), cuDeviceGetCount)                                      \
  X(cuDeviceGet, argrl_CUresult, (argrl_CUdevice * d, int ordinal), cuDeviceGet)                       \
  X(cuDeviceGetName, argrl_CUresult, (char* name, int len, argrl_CUdevice d), cuDeviceGetName)        \
  X(cuDeviceGetAttribute, argrl_CUresult, (int* v, unsigned attrib, argrl_CUdevice d), cuDeviceGetAttribute) \
  X(cuDevicePrimaryCtxRetain, argrl_CUresult, (argrl_CUcontext * c, argrl_CUdevice d),                  \
    cuDevicePrimaryCtxRetain)                                                                          \
  X(cuDevicePrimaryCtxRelease, argrl_CUresult, (argrl_CUdevice d), cuDevicePrimaryCtxRelease_v2)      \
  X(cuCtxSetCurrent, argrl_CUresult, (argrl_CUcontext c), cuCtxSetCurrent)                             \
  X(cuStreamCreate, argrl_CUresult, (argrl_CUstream * s, unsigned flags), cuStreamCreate)              \
  X(cuStreamDestroy, argrl_CUresult, (argrl_CUstream s), cuStreamDestroy_v2)                           \
  X(cuStreamSynchronize, argrl_CUresult, (argrl_CUstream s), cuStreamSynchronize)                      \
  X(cuStreamQuery, argrl_CUresult, (argrl_CUstream s), cuStreamQuery)                                  \
  X(cuModuleLoadDataEx, argrl_CUresult,                                                                  \
    (argrl_CUmodule * m, const void* image, unsigned n, unsigned* options, void** values), cuModuleLoadDataEx) \
  X(cuModuleUnload, argrl_CUresult, (argrl_CUmodule m), cuModuleUnload)                                \
  X(cuModuleGetFunction, argrl_CUresult, (argrl_CUfunction * f, argrl_CUmodule m, const char* name),     \
    cuModuleGetFunction)                                                                               \
  X(cuFuncGetAttribute, argrl_CUresult, (int* v, unsigned attrib, argrl_CUfunction f), cuFuncGetAttribute) \
  X(cuLaunchKernel, argrl_CUresult,                                                                      \
    (argrl_CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,   \
     unsigned shared, argrl_CUstream s, void** params, void** extra),                                    \
    cuLaunchKernel)                                                                                    \
  X(cuMemAlloc, argrl_CUresult, (argrl_CUdeviceptr * p, size_t bytes), cuMemAlloc_v2)                   \
  X(cuMemFree, argrl_CUresult, (argrl_CUdeviceptr p), cuMemFree_v2)                                     \
  X(cuMemGetInfo, argrl_CUresult, (size_t * free_bytes, size_t * total), cuMemGetInfo_v2)               \
  X(cuMemcpyHtoDAsync, argrl_CUresult, (argrl_CUdeviceptr dst, const void* src, size_t n, argrl_CUstream s), \
    cuMemcpyHtoDAsync_v2)                                                                              \
  X(cuMemcpyDtoHAsync, argrl_CUresult, (void* dst, argrl_CUdeviceptr src, size_t n, argrl_CUstream s),   \
    cuMemcpyDtoHAsync_v2)                                                                              \
  X(cuMemcpyDtoDAsync, argrl_CUresult,                                                                   \
    (argrl_CUdeviceptr dst, argrl_CUdeviceptr src, size_t n, argrl_CUstream s), cuMemcpyDtoDAsync_v2)   \
  X(cuMemsetD32Async, argrl_CUresult, (argrl_CUdeviceptr dst, unsigned v, size_t n, argrl_CUstream s),   \
    cuMemsetD32Async)                                                                                  \
  X(cuMemsetD16Async, argrl_CUresult, (argrl_CUdeviceptr dst, unsigned short v, size_t n, argrl_CUstream s), \
    cuMemsetD16Async)

// Graph capture and pinned host memory (decode step graphs, graph.go):
// resolved like the others, but a driver without one of them still runs
// (eager launches; DriverReport marks it "?").
#define ARGRL_DRIVER_GRAPH_ENTRIES(X)                                                                    \
  X(cuStreamBeginCapture, argrl_CUresult, (argrl_CUstream s, unsigned mode), cuStreamBeginCapture_v2)  \
  X(cuStreamEndCapture, argrl_CUresult, (argrl_CUstream s, argrl_CUgraph * g), cuStreamEndCapture)     \
  X(cuGraphInstantiate, argrl_CUresult,                                                                  \
    (argrl_CUgraphExec * e, argrl_CUgraph g, argrl_CUgraphNode * error_node, char* log, size_t loglen),  \
    cuGraphInstantiate_v2)                                                                             \
  X(cuGraphLaunch, argrl_CUresult, (argrl_CUgraphExec e, argrl_CUstream s), cuGraphLaunch)             \
  X(cuGraphExecDestroy, argrl_CUresult, (argrl_CUgraphExec e), cuGraphExecDestroy)                     \
  X(cuGraphDestroy, argrl_CUresult, (argrl_CUgraph g), cuGraphDestroy)                                 \
  X(cuMemHostAlloc, argrl_CUresult, (void** p, size_t bytes, unsigned flags), cuMemHostAlloc)          \
  X(cuMemFreeHost, argrl_CUresult, (void* p), cuMemFreeHost)

// cuBLAS entry points: the names are the library's own symbols in
// cuBLAS 11, 12 and 13 (cublas_v2.h maps cublasCreate to cublasCreate_v2).
#define ARGRL_CUBLAS_ENTRIES(X)                                                                          \
  X(cublasCreate, argrl_cublasStatus, (argrl_cublasHandle_t * h), cublasCreate_v2)                      \
  X(cublasDestroy, argrl_cublasStatus, (argrl_cublasHandle_t h), cublasDestroy_v2)                      \
  X(cublasSetStream, argrl_cublasStatus, (argrl_cublasHandle_t h, argrl_CUstream s), cublasSetStream_v2) \
  X(cublasGetVersion, argrl_cublasStatus, (argrl_cublasHandle_t h, int* v), cublasGetVersion_v2)        \
  X(cublasGemmStridedBatchedEx, argrl_cublasStatus,                                                      \
    (argrl_cublasHandle_t h, unsigned ta, unsigned tb, int m, int n, int k, const void* alpha, const void* A, \
     unsigned at, int lda, long long sa, const void* B, unsigned bt, int ldb, long long sb, const void* beta, \
     void* C, unsigned ct, int ldc, long long sc, int batch, unsigned compute, int algo),                 \
    cublasGemmStridedBatchedEx)

// cuBLASLt (GEMMs with epilogues). Its descriptors are pointers to the
// headers' semi-opaque structs; here they are void* (one pointer: the same
// ABI), and the algorithm and heuristic result are declared with the
// headers' layout. abicheck.c defines ARGRL_LT_HEADER_TYPES and the
// argrl_ names as the headers' own types, so the entry points below are
// checked against cublasLt.h exactly, and compares the layouts.
typedef struct cublasLtContext* argrl_cublasLtHandle_t;
typedef struct {
  uint64_t data[8];
} argrl_LtAlgo;
typedef struct {
  argrl_LtAlgo algo;
  size_t workspaceSize;
  unsigned state;
  float wavesCount;
  int reserved[4];
} argrl_LtHeuristic;
#ifndef ARGRL_LT_HEADER_TYPES
typedef void* argrl_cublasLtMatmulDesc_t;
typedef void* argrl_cublasLtMatrixLayout_t;
typedef void* argrl_cublasLtMatmulPreference_t;
typedef argrl_LtAlgo argrl_cublasLtMatmulAlgo_t;
typedef argrl_LtHeuristic argrl_cublasLtMatmulHeuristicResult_t;
#endif

#define ARGRL_CUBLASLT_ENTRIES(X)                                                                        \
  X(cublasLtCreate, argrl_cublasStatus, (argrl_cublasLtHandle_t * h), cublasLtCreate)                    \
  X(cublasLtDestroy, argrl_cublasStatus, (argrl_cublasLtHandle_t h), cublasLtDestroy)                    \
  X(cublasLtMatmulDescCreate, argrl_cublasStatus,                                                        \
    (argrl_cublasLtMatmulDesc_t * d, unsigned compute, unsigned scale), cublasLtMatmulDescCreate)         \
  X(cublasLtMatmulDescDestroy, argrl_cublasStatus, (argrl_cublasLtMatmulDesc_t d), cublasLtMatmulDescDestroy) \
  X(cublasLtMatmulDescSetAttribute, argrl_cublasStatus,                                                  \
    (argrl_cublasLtMatmulDesc_t d, unsigned attr, const void* buf, size_t n), cublasLtMatmulDescSetAttribute) \
  X(cublasLtMatrixLayoutCreate, argrl_cublasStatus,                                                      \
    (argrl_cublasLtMatrixLayout_t * l, unsigned type, uint64_t rows, uint64_t cols, int64_t ld),          \
    cublasLtMatrixLayoutCreate)                                                                          \
  X(cublasLtMatrixLayoutDestroy, argrl_cublasStatus, (argrl_cublasLtMatrixLayout_t l), cublasLtMatrixLayoutDestroy) \
  X(cublasLtMatrixLayoutSetAttribute, argrl_cublasStatus,                                                \
    (argrl_cublasLtMatrixLayout_t l, unsigned attr, const void* buf, size_t n), cublasLtMatrixLayoutSetAttribute) \
  X(cublasLtMatmulPreferenceCreate, argrl_cublasStatus, (argrl_cublasLtMatmulPreference_t * p),           \
    cublasLtMatmulPreferenceCreate)                                                                      \
  X(cublasLtMatmulPreferenceDestroy, argrl_cublasStatus, (argrl_cublasLtMatmulPreference_t p),            \
    cublasLtMatmulPreferenceDestroy)                                                                     \
  X(cublasLtMatmulPreferenceSetAttribute, argrl_cublasStatus,                                            \
    (argrl_cublasLtMatmulPreference_t p, unsigned attr, const void* buf, size_t n),                      \
    cublasLtMatmulPreferenceSetAttribute)                                                                \
  X(cublasLtMatmulAlgoGetHeuristic, argrl_cublasStatus,                                                  \
    (argrl_cublasLtHandle_t h, argrl_cublasLtMatmulDesc_t op, argrl_cublasLtMatrixLayout_t a,             \
     argrl_cublasLtMatrixLayout_t b, argrl_cublasLtMatrixLayout_t c, argrl_cublasLtMatrixLayout_t d,       \
     argrl_cublasLtMatmulPreference_t pref, int want, argrl_cublasLtMatmulHeuristicResult_t* res, int* got), \
    cublasLtMatmulAlgoGetHeuristic)                                                                      \
  X(cublasLtMatmul, argrl_cublasStatus,                                                                  \
    (argrl_cublasLtHandle_t h, argrl_cublasLtMatmulDesc_t op, const void* alpha, const void* A,           \
     argrl_cublasLtMatrixLayout_t a, const void* B, argrl_cublasLtMatrixLayout_t b, const void* beta,      \
     const void* C, argrl_cublasLtMatrixLayout_t c, void* D, argrl_cublasLtMatrixLayout_t d,               \
     const argrl_cublasLtMatmulAlgo_t* algo, void* ws, size_t wsbytes, argrl_CUstream s),                  \
    cublasLtMatmul)

#define ARGRL_TYPEDEF(name, ret, params, sym) typedef ret(*argrl_pfn_##name) params;
ARGRL_DRIVER_ENTRIES(ARGRL_TYPEDEF)
ARGRL_DRIVER_GRAPH_ENTRIES(ARGRL_TYPEDEF)
ARGRL_CUBLAS_ENTRIES(ARGRL_TYPEDEF)
ARGRL_CUBLASLT_ENTRIES(ARGRL_TYPEDEF)
#undef ARGRL_TYPEDEF

// Enumerators the device passes (values from the 11.8 headers, unchanged
// since; abicheck.c compares them too).
#define ARGRL_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define ARGRL_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define ARGRL_CU_STREAM_NON_BLOCKING 1
#define ARGRL_CU_STREAM_CAPTURE_MODE_RELAXED 2
#define ARGRL_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK 0
#define ARGRL_CU_FUNC_ATTRIBUTE_NUM_REGS 4
#define ARGRL_CU_JIT_ERROR_LOG_BUFFER 5
#define ARGRL_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
#define ARGRL_CUDA_R_32F 0
#define ARGRL_CUDA_R_16BF 14
#define ARGRL_CUBLAS_COMPUTE_32F 68
#define ARGRL_CUBLAS_GEMM_DEFAULT (-1)
#define ARGRL_CUBLAS_STATUS_NOT_SUPPORTED 15
#define ARGRL_CUBLASLT_MATMUL_DESC_TRANSA 3
#define ARGRL_CUBLASLT_MATMUL_DESC_TRANSB 4
#define ARGRL_CUBLASLT_MATMUL_DESC_EPILOGUE 7
#define ARGRL_CUBLASLT_MATMUL_DESC_BIAS_POINTER 8
#define ARGRL_CUBLASLT_EPILOGUE_BIAS 4
#define ARGRL_CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT 5
#define ARGRL_CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET 6
#define ARGRL_CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES 1

// The calls the GPU device makes, defined in driver_cuda.go's preamble
// over the resolved entry points (cgo cannot call a function pointer).
int argrl_load_driver(const char* path, int use_gpa, int* version, char* err, size_t errlen);
int argrl_load_cublas(const char* path, char* err, size_t errlen);
int argrl_load_cublaslt(const char* path, char* err, size_t errlen);
int argrl_has_cublaslt(void);
const char* argrl_report_text(void);
int argrl_entry_count(void);
argrl_CUresult drv_init(void);
const char* drv_err_name(argrl_CUresult e);
const char* drv_err_string(argrl_CUresult e);
argrl_CUresult drv_device_count(int* n);
argrl_CUresult drv_device(argrl_CUdevice* d, int i);
argrl_CUresult drv_device_name(char* s, int n, argrl_CUdevice d);
argrl_CUresult drv_capability(int* major, int* minor, argrl_CUdevice d);
argrl_CUresult drv_retain(argrl_CUcontext* c, argrl_CUdevice d);
argrl_CUresult drv_release(argrl_CUdevice d);
argrl_CUresult drv_set_ctx(argrl_CUcontext c);
argrl_CUresult drv_stream(argrl_CUstream* s);
argrl_CUresult drv_stream_destroy(argrl_CUstream s);
argrl_CUresult drv_sync(argrl_CUstream s);
argrl_CUresult drv_load_module(argrl_CUmodule* m, const char* ptx, char* log, size_t loglen);
argrl_CUresult drv_unload(argrl_CUmodule m);
argrl_CUresult drv_function(argrl_CUfunction* f, argrl_CUmodule m, const char* name);
argrl_CUresult drv_func_attr(int* v, unsigned attrib, argrl_CUfunction f);
argrl_CUresult drv_stream_query(argrl_CUstream s);
argrl_CUresult drv_launch(argrl_CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, argrl_CUstream s, unsigned long long* vals, int n);
argrl_CUresult drv_alloc(argrl_CUdeviceptr* p, size_t n);
argrl_CUresult drv_free(argrl_CUdeviceptr p);
argrl_CUresult drv_mem_info(size_t* f, size_t* t);
argrl_CUresult drv_htod(argrl_CUdeviceptr d, const void* s, size_t n, argrl_CUstream st);
argrl_CUresult drv_dtoh(void* d, argrl_CUdeviceptr s, size_t n, argrl_CUstream st);
argrl_CUresult drv_dtod(argrl_CUdeviceptr d, argrl_CUdeviceptr s, size_t n, argrl_CUstream st);
argrl_CUresult drv_memset32(argrl_CUdeviceptr d, unsigned v, size_t n, argrl_CUstream st);
argrl_CUresult drv_memset16(argrl_CUdeviceptr d, unsigned short v, size_t n, argrl_CUstream st);
int drv_graphs_available(void);
argrl_CUresult drv_capture_begin(argrl_CUstream s);
argrl_CUresult drv_capture_end(argrl_CUstream s, argrl_CUgraphExec* e, char* log, size_t loglen);
argrl_CUresult drv_graph_launch(argrl_CUgraphExec e, argrl_CUstream s);
argrl_CUresult drv_graph_destroy(argrl_CUgraphExec e);
argrl_CUresult drv_host_alloc(void** p, size_t n);
argrl_CUresult drv_host_free(void* p);
argrl_cublasStatus blas_create(argrl_cublasHandle_t* h, argrl_CUstream s);
argrl_cublasStatus blas_destroy(argrl_cublasHandle_t h);
int blas_version(argrl_cublasHandle_t h);
argrl_cublasStatus blaslt_create(argrl_cublasLtHandle_t* h);
argrl_cublasStatus blaslt_destroy(argrl_cublasLtHandle_t h);
// argrl_lt_plan is one kind of cublasLtMatmul call, made once (blaslt_plan).
typedef struct {
  argrl_cublasLtMatmulDesc_t op;
  argrl_cublasLtMatrixLayout_t la, lb, lc;
  argrl_cublasLtMatmulAlgo_t algo;
} argrl_lt_plan;
argrl_cublasStatus blaslt_plan(argrl_cublasLtHandle_t h, int ta, int tb, int m, int n, int k, int at, long long lda, long long sa, int bt, long long ldb, long long sb, int ct, long long ldc, long long sc, int batch, argrl_CUdeviceptr bias, size_t wsbytes, argrl_lt_plan** out);
argrl_cublasStatus blaslt_run(argrl_cublasLtHandle_t h, const argrl_lt_plan* p, float alpha, argrl_CUdeviceptr A, argrl_CUdeviceptr B, float beta, argrl_CUdeviceptr C, argrl_CUdeviceptr ws, size_t wsbytes, argrl_CUstream s);
void blaslt_plan_free(argrl_lt_plan* p);
argrl_cublasStatus blas_gemm(argrl_cublasHandle_t h, int ta, int tb, int m, int n, int k, float alpha, argrl_CUdeviceptr A, int at, int lda, long long sa, argrl_CUdeviceptr B, int bt, int ldb, long long sb, float beta, argrl_CUdeviceptr C, int ct, int ldc, long long sc, int batch);

#endif
