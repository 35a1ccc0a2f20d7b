//go:build argrl_cuda

package cuda

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudrv.h"

// The resolved entry points (cudrv.h), filled once by argrl_load.
#define ARGRL_FIELD(name, ret, params, sym) argrl_pfn_##name name;
typedef struct {
	ARGRL_DRIVER_ENTRIES(ARGRL_FIELD)
	ARGRL_DRIVER_GRAPH_ENTRIES(ARGRL_FIELD)
	ARGRL_CUBLAS_ENTRIES(ARGRL_FIELD)
	ARGRL_CUBLASLT_ENTRIES(ARGRL_FIELD)
} argrl_api;
#undef ARGRL_FIELD
static argrl_api D;
static int argrl_graphs_ok;  // every ARGRL_DRIVER_GRAPH_ENTRIES entry resolved

// One line per entry point: "name symbol how" (for DriverReport).
static char argrl_report[8192];

typedef unsigned (*argrl_gpa_v1)(const char*, void**, int, unsigned long long);
typedef unsigned (*argrl_gpa_v2)(const char*, void**, int, unsigned long long, int*);

static void argrl_note(const char* name, void* p, const char* how) {
	Dl_info info;
	const char* sym = (p && dladdr(p, &info) && info.dli_sname) ? info.dli_sname : "?";
	size_t n = strlen(argrl_report);
	snprintf(argrl_report + n, sizeof argrl_report - n, "%s %s %s\n", name, sym, how);
}

// argrl_entry resolves one driver entry point: through cuGetProcAddress
// (its CUDA 12 form first) for ABI version want, else by the versioned
// symbol sym; *how says which. NULL when the driver lacks it.
static void* argrl_entry(void* lib, argrl_gpa_v1 g1, argrl_gpa_v2 g2, int want, const char* name, const char* sym,
                         const char** how) {
	void* p = NULL;
	int st = 0;
	*how = "dlsym";
	if (g2 && g2(name, &p, want, 0, &st) == 0 && p) {
		*how = "cuGetProcAddress_v2";
	} else if (g1 && g1(name, &p, want, 0) == 0 && p) {
		*how = "cuGetProcAddress";
	} else {
		p = dlsym(lib, sym);
	}
	return p;
}

// argrl_load_driver opens the driver (libcuda, the path given) and resolves
// every driver entry point: through cuGetProcAddress (its CUDA 12 form
// first) for the ABI version ARGRL_CUDA_ABI, else (or without use_gpa) by
// the versioned symbol name.
// It returns 0, or writes why not into err.
int argrl_load_driver(const char* path, int use_gpa, int* version, char* err, size_t errlen) {
	void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(err, errlen, "dlopen %s: %s", path, dlerror());
		return 1;
	}
	argrl_pfn_cuDriverGetVersion ver = (argrl_pfn_cuDriverGetVersion)dlsym(lib, "cuDriverGetVersion");
	if (!ver || ver(version) != 0) {
		snprintf(err, errlen, "%s: cuDriverGetVersion failed (not a CUDA driver library?)", path);
		return 1;
	}
	int want = *version < ARGRL_CUDA_ABI ? *version : ARGRL_CUDA_ABI;
	argrl_gpa_v2 g2 = use_gpa ? (argrl_gpa_v2)dlsym(lib, "cuGetProcAddress_v2") : NULL;
	argrl_gpa_v1 g1 = use_gpa ? (argrl_gpa_v1)dlsym(lib, "cuGetProcAddress") : NULL;
	argrl_report[0] = 0;
#define ARGRL_RESOLVE(name, ret, params, sym)                                  \
	{                                                                          \
		const char* how;                                                       \
		void* p = argrl_entry(lib, g1, g2, want, #name, #sym, &how);           \
		if (!p) {                                                              \
			snprintf(err, errlen, "%s (CUDA driver %d): no entry point %s", path, *version, #sym); \
			return 1;                                                          \
		}                                                                      \
		D.name = (argrl_pfn_##name)p;                                          \
		argrl_note(#name, p, how);                                             \
	}
	ARGRL_DRIVER_ENTRIES(ARGRL_RESOLVE)
#undef ARGRL_RESOLVE
	// the graph entry points: optional (without them, eager launches)
	argrl_graphs_ok = 1;
#define ARGRL_RESOLVE_OPT(name, ret, params, sym)                              \
	{                                                                          \
		const char* how;                                                       \
		void* p = argrl_entry(lib, g1, g2, want, #name, #sym, &how);           \
		D.name = (argrl_pfn_##name)p;                                          \
		if (!p) argrl_graphs_ok = 0;                                           \
		argrl_note(#name, p, p ? how : "missing");                             \
	}
	ARGRL_DRIVER_GRAPH_ENTRIES(ARGRL_RESOLVE_OPT)
#undef ARGRL_RESOLVE_OPT
	return 0;
}

// argrl_load_cublas opens cuBLAS and resolves its entry points by name.
int argrl_load_cublas(const char* path, char* err, size_t errlen) {
	void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(err, errlen, "dlopen %s: %s", path, dlerror());
		return 1;
	}
#define ARGRL_RESOLVE(name, ret, params, sym)                                      \
	{                                                                              \
		void* p = dlsym(lib, #sym);                                                \
		if (!p) {                                                                  \
			snprintf(err, errlen, "%s: no entry point %s", path, #sym);            \
			dlclose(lib);                                                          \
			return 1;                                                              \
		}                                                                          \
		D.name = (argrl_pfn_##name)p;                                              \
		argrl_note(#name, p, "dlsym");                                             \
	}
	ARGRL_CUBLAS_ENTRIES(ARGRL_RESOLVE)
#undef ARGRL_RESOLVE
	return 0;
}

// argrl_load_cublaslt opens cuBLASLt for the libraries opened after it
// (cuBLAS, whose NEEDED entry it then satisfies by its soname) and
// resolves its entry points by name. A library without them is refused
// (err), as one that does not open.
int argrl_load_cublaslt(const char* path, char* err, size_t errlen) {
	void* lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (!lib) {
		snprintf(err, errlen, "dlopen %s: %s", path, dlerror());
		return 1;
	}
#define ARGRL_RESOLVE(name, ret, params, sym)                                      \
	{                                                                              \
		void* p = dlsym(lib, #sym);                                                \
		if (!p) {                                                                  \
			snprintf(err, errlen, "%s: no entry point %s", path, #sym);            \
			return 1;                                                              \
		}                                                                          \
		D.name = (argrl_pfn_##name)p;                                              \
		argrl_note(#name, p, "dlsym");                                             \
	}
	ARGRL_CUBLASLT_ENTRIES(ARGRL_RESOLVE)
#undef ARGRL_RESOLVE
	return 0;
}
int argrl_has_cublaslt(void) { return D.cublasLtMatmul != NULL; }

const char* argrl_report_text(void) { return argrl_report; }

#define ARGRL_COUNT(name, ret, params, sym) +1
int argrl_entry_count(void) {
	return 0 ARGRL_DRIVER_ENTRIES(ARGRL_COUNT) ARGRL_DRIVER_GRAPH_ENTRIES(ARGRL_COUNT) ARGRL_CUBLAS_ENTRIES(ARGRL_COUNT) +
	       (argrl_has_cublaslt() ? 0 ARGRL_CUBLASLT_ENTRIES(ARGRL_COUNT) : 0);
}
#undef ARGRL_COUNT

// Calls through the table (cgo cannot call a C function pointer).
argrl_CUresult drv_init(void) { return D.cuInit(0); }
const char* drv_err_name(argrl_CUresult e) {
	const char* s = NULL;
	return D.cuGetErrorName(e, &s) == 0 && s ? s : "CUDA_ERROR_?";
}
const char* drv_err_string(argrl_CUresult e) {
	const char* s = NULL;
	return D.cuGetErrorString(e, &s) == 0 && s ? s : "unknown error";
}
argrl_CUresult drv_device_count(int* n) { return D.cuDeviceGetCount(n); }
argrl_CUresult drv_device(argrl_CUdevice* d, int i) { return D.cuDeviceGet(d, i); }
argrl_CUresult drv_device_name(char* s, int n, argrl_CUdevice d) { return D.cuDeviceGetName(s, n, d); }
argrl_CUresult drv_capability(int* major, int* minor, argrl_CUdevice d) {
	argrl_CUresult r = D.cuDeviceGetAttribute(major, ARGRL_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);
	return r ? r : D.cuDeviceGetAttribute(minor, ARGRL_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);
}
argrl_CUresult drv_retain(argrl_CUcontext* c, argrl_CUdevice d) { return D.cuDevicePrimaryCtxRetain(c, d); }
argrl_CUresult drv_release(argrl_CUdevice d) { return D.cuDevicePrimaryCtxRelease(d); }
argrl_CUresult drv_set_ctx(argrl_CUcontext c) { return D.cuCtxSetCurrent(c); }
argrl_CUresult drv_stream(argrl_CUstream* s) { return D.cuStreamCreate(s, ARGRL_CU_STREAM_NON_BLOCKING); }
argrl_CUresult drv_stream_destroy(argrl_CUstream s) { return D.cuStreamDestroy(s); }
argrl_CUresult drv_sync(argrl_CUstream s) { return D.cuStreamSynchronize(s); }
// drv_load_module JIT-compiles PTX; the JIT's error log goes to log.
argrl_CUresult drv_load_module(argrl_CUmodule* m, const char* ptx, char* log, size_t loglen) {
	unsigned opts[2] = {ARGRL_CU_JIT_ERROR_LOG_BUFFER, ARGRL_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
	void* vals[2] = {log, (void*)loglen};
	return D.cuModuleLoadDataEx(m, ptx, 2, opts, vals);
}
argrl_CUresult drv_unload(argrl_CUmodule m) { return D.cuModuleUnload(m); }
argrl_CUresult drv_func_attr(int* v, unsigned attrib, argrl_CUfunction f) { return D.cuFuncGetAttribute(v, attrib, f); }
argrl_CUresult drv_stream_query(argrl_CUstream s) { return D.cuStreamQuery(s); }
argrl_CUresult drv_function(argrl_CUfunction* f, argrl_CUmodule m, const char* name) {
	return D.cuModuleGetFunction(f, m, name);
}
// drv_launch passes kernel parameter i as the address of vals[i] (the
// driver copies them at launch).
argrl_CUresult drv_launch(argrl_CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, argrl_CUstream s, unsigned long long* vals, int n) {
	void* params[64];
	if (n > 64) return 1;  // CUDA_ERROR_INVALID_VALUE
	for (int i = 0; i < n; i++) params[i] = &vals[i];
	return D.cuLaunchKernel(f, gx, gy, gz, bx, by, bz, 0, s, params, NULL);
}
argrl_CUresult drv_alloc(argrl_CUdeviceptr* p, size_t n) { return D.cuMemAlloc(p, n); }
argrl_CUresult drv_free(argrl_CUdeviceptr p) { return D.cuMemFree(p); }
argrl_CUresult drv_mem_info(size_t* f, size_t* t) { return D.cuMemGetInfo(f, t); }
argrl_CUresult drv_htod(argrl_CUdeviceptr d, const void* s, size_t n, argrl_CUstream st) {
	return D.cuMemcpyHtoDAsync(d, s, n, st);
}
argrl_CUresult drv_dtoh(void* d, argrl_CUdeviceptr s, size_t n, argrl_CUstream st) {
	return D.cuMemcpyDtoHAsync(d, s, n, st);
}
argrl_CUresult drv_dtod(argrl_CUdeviceptr d, argrl_CUdeviceptr s, size_t n, argrl_CUstream st) {
	return D.cuMemcpyDtoDAsync(d, s, n, st);
}
argrl_CUresult drv_memset32(argrl_CUdeviceptr d, unsigned v, size_t n, argrl_CUstream st) {
	return D.cuMemsetD32Async(d, v, n, st);
}
argrl_CUresult drv_memset16(argrl_CUdeviceptr d, unsigned short v, size_t n, argrl_CUstream st) {
	return D.cuMemsetD16Async(d, v, n, st);
}

// Graphs: capture in relaxed mode (the Go calls that issue the captured
// work may run on different OS threads); the graph is instantiated and
// dropped at once (the executable graph does not need it).
int drv_graphs_available(void) { return argrl_graphs_ok; }
argrl_CUresult drv_capture_begin(argrl_CUstream s) {
	return D.cuStreamBeginCapture(s, ARGRL_CU_STREAM_CAPTURE_MODE_RELAXED);
}
argrl_CUresult drv_capture_end(argrl_CUstream s, argrl_CUgraphExec* e, char* log, size_t loglen) {
	argrl_CUgraph g = NULL;
	argrl_CUresult r = D.cuStreamEndCapture(s, &g);
	if (r) return r;
	r = D.cuGraphInstantiate(e, g, NULL, log, loglen);
	argrl_CUresult r2 = D.cuGraphDestroy(g);
	return r ? r : r2;
}
argrl_CUresult drv_graph_launch(argrl_CUgraphExec e, argrl_CUstream s) { return D.cuGraphLaunch(e, s); }
argrl_CUresult drv_graph_destroy(argrl_CUgraphExec e) { return D.cuGraphExecDestroy(e); }
argrl_CUresult drv_host_alloc(void** p, size_t n) { return D.cuMemHostAlloc(p, n, 0); }
argrl_CUresult drv_host_free(void* p) { return D.cuMemFreeHost(p); }

argrl_cublasStatus blas_create(argrl_cublasHandle_t* h, argrl_CUstream s) {
	argrl_cublasStatus st = D.cublasCreate(h);
	return st ? st : D.cublasSetStream(*h, s);
}
argrl_cublasStatus blas_destroy(argrl_cublasHandle_t h) { return D.cublasDestroy(h); }
int blas_version(argrl_cublasHandle_t h) {
	int v = 0;
	return D.cublasGetVersion(h, &v) == 0 ? v : 0;
}
// blas_gemm is cublasGemmStridedBatchedEx with float32 compute; at, bt, ct
// are 0 for f32, 1 for bf16.
argrl_cublasStatus blas_gemm(argrl_cublasHandle_t h, int ta, int tb, int m, int n, int k, float alpha,
                                    argrl_CUdeviceptr A, int at, int lda, long long sa, argrl_CUdeviceptr B, int bt,
                                    int ldb, long long sb, float beta, argrl_CUdeviceptr C, int ct, int ldc,
                                    long long sc, int batch) {
	unsigned ty[2] = {ARGRL_CUDA_R_32F, ARGRL_CUDA_R_16BF};
	return D.cublasGemmStridedBatchedEx(h, ta ? 1 : 0, tb ? 1 : 0, m, n, k, &alpha, (const void*)A, ty[at], lda, sa,
	                                    (const void*)B, ty[bt], ldb, sb, &beta, (void*)C, ty[ct], ldc, sc, batch,
	                                    ARGRL_CUBLAS_COMPUTE_32F, ARGRL_CUBLAS_GEMM_DEFAULT);
}

argrl_cublasStatus blaslt_create(argrl_cublasLtHandle_t* h) { return D.cublasLtCreate(h); }
argrl_cublasStatus blaslt_destroy(argrl_cublasLtHandle_t h) { return D.cublasLtDestroy(h); }
// blaslt_layout describes a rows×cols column-major matrix with leading
// dimension ld, batch matrices stride elements apart.
static argrl_cublasStatus blaslt_layout(argrl_cublasLtMatrixLayout_t* l, unsigned ty, int64_t rows, int64_t cols,
                                        int64_t ld, int batch, long long stride) {
	argrl_cublasStatus st = D.cublasLtMatrixLayoutCreate(l, ty, (uint64_t)rows, (uint64_t)cols, ld);
	if (st || batch <= 1) return st;
	int32_t n = batch;
	int64_t s = stride;
	st = D.cublasLtMatrixLayoutSetAttribute(*l, ARGRL_CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &n, sizeof n);
	return st ? st : D.cublasLtMatrixLayoutSetAttribute(*l, ARGRL_CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &s, sizeof s);
}
// blaslt_plan prepares one kind of blas_gemm call through cublasLtMatmul:
// a matmul descriptor (float32 compute and scale, the transposes, the bias
// epilogue when bias is not 0: an f32 [m] added to every column), the
// matrix layouts, and the heuristic's first algorithm within the
// workspace. The plan lives in C memory until blaslt_plan_free, so a
// cublasLtMatmul captured into a graph refers to descriptors and an
// algorithm that stay where they were at every replay.
argrl_cublasStatus blaslt_plan(argrl_cublasLtHandle_t h, int ta, int tb, int m, int n, int k, int at, long long lda,
                               long long sa, int bt, long long ldb, long long sb, int ct, long long ldc, long long sc,
                               int batch, argrl_CUdeviceptr bias, size_t wsbytes, argrl_lt_plan** out) {
	unsigned ty[2] = {ARGRL_CUDA_R_32F, ARGRL_CUDA_R_16BF};
	argrl_lt_plan* p = (argrl_lt_plan*)calloc(1, sizeof *p);
	argrl_cublasLtMatmulPreference_t pref = NULL;
	argrl_cublasLtMatmulHeuristicResult_t res;
	int got = 0;
	int32_t opA = ta ? 1 : 0, opB = tb ? 1 : 0;  // CUBLAS_OP_N, CUBLAS_OP_T
	uint64_t wsmax = wsbytes;
	*out = NULL;
	if (!p) return 3;  // CUBLAS_STATUS_ALLOC_FAILED
	argrl_cublasStatus st = D.cublasLtMatmulDescCreate(&p->op, ARGRL_CUBLAS_COMPUTE_32F, ARGRL_CUDA_R_32F);
	if (!st) st = D.cublasLtMatmulDescSetAttribute(p->op, ARGRL_CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA);
	if (!st) st = D.cublasLtMatmulDescSetAttribute(p->op, ARGRL_CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB);
	if (!st && bias) {
		uint32_t epi = ARGRL_CUBLASLT_EPILOGUE_BIAS;
		const void* bp = (const void*)bias;
		st = D.cublasLtMatmulDescSetAttribute(p->op, ARGRL_CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
		if (!st) st = D.cublasLtMatmulDescSetAttribute(p->op, ARGRL_CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp);
	}
	if (!st) st = blaslt_layout(&p->la, ty[at], ta ? k : m, ta ? m : k, lda, batch, sa);
	if (!st) st = blaslt_layout(&p->lb, ty[bt], tb ? n : k, tb ? k : n, ldb, batch, sb);
	if (!st) st = blaslt_layout(&p->lc, ty[ct], m, n, ldc, batch, sc);
	if (!st) st = D.cublasLtMatmulPreferenceCreate(&pref);
	if (!st) st = D.cublasLtMatmulPreferenceSetAttribute(pref, ARGRL_CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsmax, sizeof wsmax);
	if (!st) st = D.cublasLtMatmulAlgoGetHeuristic(h, p->op, p->la, p->lb, p->lc, p->lc, pref, 1, &res, &got);
	if (!st && got < 1) st = ARGRL_CUBLAS_STATUS_NOT_SUPPORTED;
	if (pref) D.cublasLtMatmulPreferenceDestroy(pref);
	if (st) {
		blaslt_plan_free(p);
		return st;
	}
	p->algo = res.algo;
	*out = p;
	return 0;
}

// blaslt_run issues a planned product on stream s; alpha and beta are read
// from the host when it is issued (or captured).
argrl_cublasStatus blaslt_run(argrl_cublasLtHandle_t h, const argrl_lt_plan* p, float alpha, argrl_CUdeviceptr A,
                              argrl_CUdeviceptr B, float beta, argrl_CUdeviceptr C, argrl_CUdeviceptr ws,
                              size_t wsbytes, argrl_CUstream s) {
	return D.cublasLtMatmul(h, p->op, &alpha, (const void*)A, p->la, (const void*)B, p->lb, &beta, (const void*)C, p->lc,
	                        (void*)C, p->lc, &p->algo, (void*)ws, wsbytes, s);
}

void blaslt_plan_free(argrl_lt_plan* p) {
	if (!p) return;
	if (p->lc) D.cublasLtMatrixLayoutDestroy(p->lc);
	if (p->lb) D.cublasLtMatrixLayoutDestroy(p->lb);
	if (p->la) D.cublasLtMatrixLayoutDestroy(p->la);
	if (p->op) D.cublasLtMatmulDescDestroy(p->op);
	free(p);
}
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	"github.com/argrl/argrl/kernels/cuda/cudalib"
)

// Supported drivers: any NVIDIA driver for CUDA 11.x, 12.x or 13.x (a GPU
// of compute capability 8.0 or newer; the PTX is sm_80 and sm_90 and the
// driver JIT-compiles it). The binary links neither libcuda nor libcublas:
// package cudalib finds libcuda.so.1, cuBLAS and cuBLASLt (the loader's
// path, /usr/local/nvidia, CUDA toolkits, python3's nvidia pip wheels;
// $ARGRL_LIBCUDA, $ARGRL_LIBCUBLAS, $ARGRL_LIBCUBLASLT override), and the
// driver is asked through cuGetProcAddress (drivers ≥ 11.3; older ones by
// the versioned symbol names) for each entry point in its CUDA 11.8 form,
// so the renamed `_v2`/`_v3` symbols of newer toolkits never matter.
var (
	loadOnce  sync.Once
	loadErr   error
	driverVer int
	loaded    []loadedLib // the files opened, in order
)

// loadedLib is one library file the process opened.
type loadedLib struct {
	lib cudalib.Lib
	cudalib.Found
}

// Loaded describes each NVIDIA library file this process opened: its
// kind, path, version and where it was found, one per line.
func Loaded() string {
	var b strings.Builder
	for _, l := range loaded {
		fmt.Fprintf(&b, "loaded %s: %s\n", l.lib.Name, l.Found)
	}
	return b.String()
}

func loadLibraries() error {
	loadOnce.Do(func() { loadErr = openLibraries(cudalib.System()) })
	return loadErr
}

func openLibraries(env *cudalib.Env) error {
	var errBuf [1024]C.char
	msg := func() string { return C.GoString(&errBuf[0]) }
	// ARGRL_CUDA_DLSYM=1 resolves by symbol name, as for drivers before
	// 11.3 (tests the fallback on a current driver)
	useGPA := C.int(btoi(os.Getenv("ARGRL_CUDA_DLSYM") != "1"))
	drivers, err := env.Find(cudalib.Driver, 0)
	if err != nil {
		if os.Getenv(cudalib.Driver.Env) != "" {
			return fmt.Errorf("cuda: %w", err)
		}
		// last resort: the dynamic loader's own search
		drivers = []cudalib.Found{{Path: "libcuda.so.1", Where: "the dynamic loader's search"}}
	}
	var tried []string
	for _, f := range drivers {
		cs := C.CString(f.Path)
		var ver C.int
		rc := C.argrl_load_driver(cs, useGPA, &ver, &errBuf[0], C.size_t(len(errBuf)))
		C.free(unsafe.Pointer(cs))
		if rc == 0 {
			driverVer = int(ver)
			loaded = append(loaded, loadedLib{cudalib.Driver, f})
			break
		}
		tried = append(tried, msg())
	}
	if driverVer == 0 {
		return fmt.Errorf("cuda: no usable CUDA driver: %s", strings.Join(tried, "; "))
	}
	major := driverVer / 1000
	blas, err := env.Find(cudalib.CuBLAS, major)
	if err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	lts, _ := env.Find(cudalib.CuBLASLt, major)
	tried = nil
	for _, f := range blas {
		// cuBLAS needs the cuBLASLt of its own version: the one beside it,
		// else the first found of that version
		var lt *cudalib.Found
		for i := range lts {
			if lts[i].CUDA == f.CUDA && (lt == nil || filepath.Dir(lts[i].Path) == filepath.Dir(f.Path)) {
				lt = &lts[i]
			}
		}
		if lt != nil {
			cl := C.CString(lt.Path)
			rc := C.argrl_load_cublaslt(cl, &errBuf[0], C.size_t(len(errBuf)))
			C.free(unsafe.Pointer(cl))
			if rc != 0 {
				tried = append(tried, msg())
				continue
			}
		}
		cp := C.CString(f.Path)
		rc := C.argrl_load_cublas(cp, &errBuf[0], C.size_t(len(errBuf)))
		C.free(unsafe.Pointer(cp))
		if rc == 0 {
			if lt != nil {
				loaded = append(loaded, loadedLib{cudalib.CuBLASLt, *lt})
			}
			loaded = append(loaded, loadedLib{cudalib.CuBLAS, f})
			return nil
		}
		tried = append(tried, msg())
	}
	return fmt.Errorf("cuda: no usable cuBLAS for CUDA %s (install the CUDA toolkit's libcublas or the nvidia-cublas pip wheel, or set ARGRL_LIBCUBLAS): %s",
		cudaVersion(driverVer), strings.Join(tried, "; "))
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// DriverReport opens the CUDA driver and cuBLAS libraries (no GPU needed)
// and describes what this binary resolved at run time: the libraries, the
// driver's CUDA version, and per entry point the symbol it got and how
// ("cuMemAlloc cuMemAlloc_v2 cuGetProcAddress_v2").
func DriverReport() (string, error) {
	err := loadLibraries()
	var b strings.Builder
	if driverVer > 0 {
		fmt.Fprintf(&b, "driver %s: CUDA %s; cuBLAS %s\n", libPath(cudalib.Driver), cudaVersion(driverVer), libPath(cudalib.CuBLAS))
	}
	b.WriteString(Loaded())
	b.WriteString(C.GoString(C.argrl_report_text()))
	return b.String(), err
}

// libPath is the file opened for l ("-" if none).
func libPath(l cudalib.Lib) string {
	for _, x := range loaded {
		if x.lib.Name == l.Name {
			return x.Path
		}
	}
	return "-"
}

// entryPoints is the number of driver and cuBLAS entry points resolved.
func entryPoints() int { return int(C.argrl_entry_count()) }

// cudaVersion formats 12020 as "12.2".
func cudaVersion(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

// cuErr turns a CUresult into an error naming the call.
func cuErr(call string, r C.argrl_CUresult) error {
	if r == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s (%s)", call, C.GoString(C.drv_err_name(r)), C.GoString(C.drv_err_string(r)))
}
