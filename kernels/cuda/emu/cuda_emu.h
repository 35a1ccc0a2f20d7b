// cuda_emu.h: the CUDA device-language subset argrl's kernels use, emulated
// in plain C++ so that the very same .cu sources compile with g++ and run on
// the CPU (g++ -x c++ -include emu/cuda_emu.h kernel.cu).
//
// Execution model (emu_server.cpp implements it):
//   - Blocks run one after another on one OS thread. Inside a block every
//     CUDA thread is a cooperative fiber (ucontext) with its own stack.
//   - A fiber runs until it reaches a collective: __syncthreads (all threads
//     of the block), __syncwarp or a warp shuffle (all 32 lanes of its warp).
//     Arriving there, it parks; the last arrival releases the others.
//   - So between two barriers each thread runs its whole segment before the
//     next one starts, in a configurable order (forward, reverse, shuffled):
//     a missing barrier shows up as a result that depends on the order.
//   - Collectives are strict: threads of one barrier must come from the same
//     source line, a thread that exits while others wait, or a barrier that
//     can never complete, is reported as an error naming kernel, block and
//     line, instead of hanging.
//   - __shared__ is `static`: one instance shared by the threads of the
//     running block (blocks never run concurrently). No dynamic shared memory.
//   - Atomics are plain read-modify-writes (there is no concurrency).
#pragma once
#define ARGRL_EMU 1

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cmath>
#include <type_traits>

struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
};

namespace emu {
struct Thread {
  uint3 tid;
};
extern Thread* cur;  // the running fiber's thread
extern uint3 block_idx;
extern dim3 block_dim, grid_dim;

void syncthreads(int line);
void syncwarp(int line, unsigned mask);
// warp_exchange publishes v for the calling lane, waits for every lane of
// the warp, and returns the value lane src published (its own if src is out
// of range).
uint64_t warp_exchange(int line, unsigned mask, uint64_t v, int kind, int arg);
enum { SHFL_XOR, SHFL_DOWN, SHFL_UP, SHFL_IDX };

// warp_fold is one warp collective: every lane publishes size (≤ 48)
// bytes of v, the last lane to arrive runs fold(ctx, vals) once on the 32
// values (a dense array in lane order, rewritten in place), and each lane
// copies its own entry to out.
void warp_fold(int line, const void* v, size_t size, void (*fold)(void* ctx, void* vals), void* ctx, void* out);

// warp_butterfly returns what the xor butterfly
//   for (o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(FULL_MASK, v, o));
// leaves in the calling lane, bit for bit (each lane's own order of
// operations), in one collective instead of five: the kernels' warp
// reductions use it under the emulator, where a collective costs a fiber
// switch per lane.
template <class T, class F>
inline T warp_butterfly(int line, T v, F op) {
  static_assert(sizeof(T) <= 48 && std::is_trivially_copyable<T>::value, "butterfly over a type wider than 48 bytes");
  struct Fold {
    static void run(void* ctx, void* vals) {
      F& f = *static_cast<F*>(ctx);
      T a[32], b[32];
      memcpy(a, vals, sizeof a);
      for (int o = 16; o > 0; o >>= 1) {
        for (int i = 0; i < 32; i++) b[i] = f(a[i], a[i ^ o]);
        memcpy(a, b, sizeof a);
      }
      memcpy(vals, a, sizeof a);
    }
  };
  T r;
  warp_fold(line, &v, sizeof(T), &Fold::run, &op, &r);
  return r;
}

template <class T>
inline T shfl(int line, unsigned mask, T v, int kind, int arg) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "shuffle of a type wider than 8 bytes");
  uint64_t bits = 0;
  memcpy(&bits, &v, sizeof(T));
  bits = warp_exchange(line, mask, bits, kind, arg);
  T r;
  memcpy(&r, &bits, sizeof(T));
  return r;
}
}  // namespace emu

#define threadIdx (emu::cur->tid)
#define blockIdx (emu::block_idx)
#define blockDim (emu::block_dim)
#define gridDim (emu::grid_dim)
#define warpSize 32

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __shared__ static
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

#define __syncthreads() emu::syncthreads(__LINE__)
#define __syncwarp(...) emu::syncwarp(__LINE__, 0xffffffffu)
#define __shfl_xor_sync(mask, v, laneMask) emu::shfl(__LINE__, (mask), (v), emu::SHFL_XOR, (laneMask))
#define __shfl_down_sync(mask, v, delta) emu::shfl(__LINE__, (mask), (v), emu::SHFL_DOWN, (int)(delta))
#define __shfl_up_sync(mask, v, delta) emu::shfl(__LINE__, (mask), (v), emu::SHFL_UP, (int)(delta))
#define __shfl_sync(mask, v, lane) emu::shfl(__LINE__, (mask), (v), emu::SHFL_IDX, (lane))

inline unsigned __float_as_uint(float f) {
  unsigned u;
  memcpy(&u, &f, 4);
  return u;
}
inline float __uint_as_float(unsigned u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
inline int __float_as_int(float f) {
  int u;
  memcpy(&u, &f, 4);
  return u;
}
inline float __int_as_float(int u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
inline float rsqrtf(float x) { return 1.f / sqrtf(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __fdividef(float a, float b) { return a / b; }
// IEEE single operations that nvcc never contracts into an FMA (g++ for
// x86-64 without -mfma never contracts either)
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
template <class T>
inline T __ldg(const T* p) {
  return *p;
}

inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }

// Atomics: fibers never run concurrently, so a read-modify-write is atomic.
template <class T>
inline T atomicAdd(T* p, T v) {
  T o = *p;
  *p = o + v;
  return o;
}
template <class T>
inline T atomicMax(T* p, T v) {
  T o = *p;
  if (v > o) *p = v;
  return o;
}
template <class T>
inline T atomicMin(T* p, T v) {
  T o = *p;
  if (v < o) *p = v;
  return o;
}
template <class T>
inline T atomicExch(T* p, T v) {
  T o = *p;
  *p = v;
  return o;
}
template <class T>
inline T atomicCAS(T* p, T cmp, T v) {
  T o = *p;
  if (o == cmp) *p = v;
  return o;
}

#include "tc_emu.h"  // the tensor-core primitives (tc.cuh)
