// abicheck.c: compiled (never run) by make cuda-check against the toolkit's
// headers. It fails to compile unless every entry point of ../cudrv.h has
// exactly the type cuda.h / cublas_api.h give it, the fallback symbol is
// the one the headers map the name to, and the enumerators have the
// headers' values:
//
//	gcc -fsyntax-only -I/usr/local/cuda/include kernels/cuda/abicheck/abicheck.c
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <stddef.h>

// cuBLASLt's descriptor types are the headers' own here (cudrv.h uses
// void* for them otherwise), so its entry points are checked exactly.
#define ARGRL_LT_HEADER_TYPES
typedef cublasLtMatmulDesc_t argrl_cublasLtMatmulDesc_t;
typedef cublasLtMatrixLayout_t argrl_cublasLtMatrixLayout_t;
typedef cublasLtMatmulPreference_t argrl_cublasLtMatmulPreference_t;
typedef cublasLtMatmulAlgo_t argrl_cublasLtMatmulAlgo_t;
typedef cublasLtMatmulHeuristicResult_t argrl_cublasLtMatmulHeuristicResult_t;

#include "../cudrv.h"

#if CUDA_VERSION < 11080 || CUDA_VERSION >= 12000
#error "abicheck: the ABI in cudrv.h is CUDA 11.8's; check it against the 11.8 headers"
#endif

#define SAME(a, b) __builtin_types_compatible_p(__typeof__(a), __typeof__(b))
#define EXPANDED2(x) #x
#define EXPANDED(x) EXPANDED2(x)
// the typedef is the type of what the header's name means (a macro for the
// versioned symbol where there is one), and that symbol is sym
#define CHECK(name, ret, params, sym)                                                   \
  _Static_assert(SAME(argrl_pfn_##name, &name), #name ": type differs from the header"); \
  _Static_assert(__builtin_strcmp(EXPANDED(name), #sym) == 0, #name ": the header maps it to another symbol than " #sym);
ARGRL_DRIVER_ENTRIES(CHECK)
ARGRL_CUBLAS_ENTRIES(CHECK)
ARGRL_CUBLASLT_ENTRIES(CHECK)

// what cudrv.h declares for cuBLASLt outside this check: descriptors are
// single pointers, the algorithm and heuristic result have the headers'
// size and field offsets
_Static_assert(sizeof(void*) == sizeof(cublasLtMatmulDesc_t) && sizeof(void*) == sizeof(cublasLtMatrixLayout_t) &&
                   sizeof(void*) == sizeof(cublasLtMatmulPreference_t),
               "cuBLASLt descriptors are not single pointers");
_Static_assert(sizeof(argrl_LtAlgo) == sizeof(cublasLtMatmulAlgo_t), "");
_Static_assert(sizeof(argrl_LtHeuristic) == sizeof(cublasLtMatmulHeuristicResult_t), "");
_Static_assert(offsetof(argrl_LtHeuristic, workspaceSize) == offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize), "");
_Static_assert(offsetof(argrl_LtHeuristic, state) == offsetof(cublasLtMatmulHeuristicResult_t, state), "");
_Static_assert(offsetof(argrl_LtHeuristic, wavesCount) == offsetof(cublasLtMatmulHeuristicResult_t, wavesCount), "");
_Static_assert(SAME(((cublasLtMatmulHeuristicResult_t*)0)->state, unsigned) &&
                   SAME(((cublasLtMatmulHeuristicResult_t*)0)->wavesCount, float),
               "heuristic result field types differ");
_Static_assert(ARGRL_CUBLAS_STATUS_NOT_SUPPORTED == CUBLAS_STATUS_NOT_SUPPORTED, "");
_Static_assert(ARGRL_CUBLASLT_MATMUL_DESC_TRANSA == CUBLASLT_MATMUL_DESC_TRANSA, "");
_Static_assert(ARGRL_CUBLASLT_MATMUL_DESC_TRANSB == CUBLASLT_MATMUL_DESC_TRANSB, "");
_Static_assert(ARGRL_CUBLASLT_MATMUL_DESC_EPILOGUE == CUBLASLT_MATMUL_DESC_EPILOGUE, "");
_Static_assert(ARGRL_CUBLASLT_MATMUL_DESC_BIAS_POINTER == CUBLASLT_MATMUL_DESC_BIAS_POINTER, "");
_Static_assert(ARGRL_CUBLASLT_EPILOGUE_BIAS == CUBLASLT_EPILOGUE_BIAS, "");
_Static_assert(ARGRL_CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, "");
_Static_assert(ARGRL_CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, "");
_Static_assert(ARGRL_CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, "");

_Static_assert(ARGRL_CUDA_ABI == CUDA_VERSION, "ARGRL_CUDA_ABI is not these headers' version");
_Static_assert(ARGRL_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "");
_Static_assert(ARGRL_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "");
_Static_assert(ARGRL_CU_STREAM_NON_BLOCKING == CU_STREAM_NON_BLOCKING, "");
_Static_assert(ARGRL_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "");
_Static_assert(ARGRL_CU_FUNC_ATTRIBUTE_NUM_REGS == CU_FUNC_ATTRIBUTE_NUM_REGS, "");
_Static_assert(ARGRL_CU_JIT_ERROR_LOG_BUFFER == CU_JIT_ERROR_LOG_BUFFER, "");
_Static_assert(ARGRL_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, "");
_Static_assert(ARGRL_CUDA_R_32F == CUDA_R_32F, "");
_Static_assert(ARGRL_CUDA_R_16BF == CUDA_R_16BF, "");
_Static_assert(ARGRL_CUBLAS_COMPUTE_32F == CUBLAS_COMPUTE_32F, "");
_Static_assert(ARGRL_CUBLAS_GEMM_DEFAULT == CUBLAS_GEMM_DEFAULT, "");
_Static_assert(SAME(argrl_CUdeviceptr, CUdeviceptr) && SAME(argrl_CUcontext, CUcontext) &&
                   SAME(argrl_CUstream, CUstream) && SAME(argrl_CUstream, cudaStream_t),
               "handle types differ");
