// fibers.cpp: the emulator's thread model (see cuda_emu.h). Every CUDA
// thread of a block is a fiber with its own stack; fibers switch only at
// collectives (__syncthreads, __syncwarp, shuffles), in a forward, reverse
// or shuffled order; barriers are strict and a block that cannot finish is
// reported as a deadlock.
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cuda_emu.h"
#include "emu_internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
extern "C" void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, size_t size);
extern "C" void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old, size_t* size_old);
#else
#define EMU_ASAN 0
#endif

// Fiber contexts. On x86-64 a hand-written switch saves the callee-saved
// registers and swaps stacks (no system call; ucontext's swapcontext makes
// a sigprocmask syscall per switch, ~50× slower). Elsewhere, ucontext.
#if defined(__x86_64__) && !defined(EMU_UCONTEXT)
#define EMU_ASM_SWITCH 1
extern "C" void emu_switch(void** save_sp, void* next_sp);
asm(R"(
.text
.globl emu_switch
.type emu_switch,@function
emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
.size emu_switch,.-emu_switch
)");
struct Ctx {
  void* sp = nullptr;
};
#else
#define EMU_ASM_SWITCH 0
struct Ctx {
  ucontext_t uc;
};
#endif
namespace emu {

Thread* cur;
uint3 block_idx;
dim3 block_dim, grid_dim;

namespace {

enum State { READY, WAIT_BLOCK, WAIT_WARP, DONE };

// A Fiber is one CUDA thread. It gets a stack when it is first scheduled;
// a thread that finishes without meeting a collective hands its stack on
// to the next thread in scheduling order that has not started yet (a
// "runner" goes through threads back to back), so a kernel without
// barriers or shuffles costs one context switch per block, not per thread,
// and the order in which thread segments run is the same either way.
struct Fiber {
  Thread t;
  Ctx ctx;
  State st;
  bool started;
  char* stack;
  int warp, lane;
  unsigned shfl_count;  // collectives done; parity selects the exchange buffer
  int line;             // source line of the collective it waits at
  // cp.async copies not yet landed: group -1 is the open (uncommitted)
  // group; committed groups are numbered 0, 1, ... in commit order
  struct Copy {
    void* dst;
    const void* src;
    int bytes, src_bytes, group;
  };
  std::vector<Copy> copies;
  int groups = 0;  // groups committed so far
};

struct Warp {
  int n;        // live lanes (32 but for a partial last warp)
  int arrived;  // lanes parked at the current collective
  int line;
  uint64_t slot[2][32];
  unsigned char wide[2][32][48];  // warp_fold's values
};

const size_t kStack = 256 * 1024;

struct Launch {
  std::function<void()> body;  // runs the kernel for emu::cur
  std::vector<Fiber> fibers;
  std::vector<Warp> warps;
  int block_arrived = 0, block_line = 0;
  bool abort = false;
  std::string err;
  std::string kernel;
  Ctx sched;
  Fiber* running = nullptr;
  std::vector<char*> stacks;  // every stack ever mapped
  std::vector<char*> free_stacks;
  char* retired = nullptr;  // the stack of a runner that just ended
  // the scheduler's position: idx[k] is the fiber it runs now
  std::vector<int> idx;
  int k = 0;
#if EMU_ASAN
  void* fake_stack = nullptr;
  const void* sched_bottom = nullptr;
  size_t sched_size = 0;
#endif
} L;

std::string where() {
  char b[160];
  int n = snprintf(b, sizeof b, "%s: block (%u,%u,%u)", L.kernel.c_str(), block_idx.x, block_idx.y, block_idx.z);
  if (cur && n > 0 && n < (int)sizeof b)
    snprintf(b + n, sizeof b - n, " thread (%u,%u,%u)", cur->tid.x, cur->tid.y, cur->tid.z);
  return b;
}

void fail(const std::string& msg) {
  if (L.err.empty()) L.err = where() + ": " + msg;
  L.abort = true;
}

// ctx_switch saves the current context in from and resumes to.
void ctx_switch(Ctx* from, Ctx* to) {
#if EMU_ASM_SWITCH
  emu_switch(&from->sp, to->sp);
#else
  swapcontext(&from->uc, &to->uc);
#endif
}

// yield parks the running fiber and returns to the scheduler.
void yield() {
  Fiber* f = L.running;
#if EMU_ASAN
  void* fs = nullptr;
  __sanitizer_start_switch_fiber(&fs, L.sched_bottom, L.sched_size);
  ctx_switch(&f->ctx, &L.sched);
  __sanitizer_finish_switch_fiber(fs, nullptr, nullptr);
#else
  ctx_switch(&f->ctx, &L.sched);
#endif
}

// fiber_main is the first frame of every runner stack; it never returns.
// It runs the thread it was started for, then, while the next thread in
// the scheduler's order has not started, that one on the same stack.
void fiber_main() {
#if EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &L.sched_bottom, &L.sched_size);
#endif
  for (;;) {
    L.body();
    L.running->st = DONE;
    int n = (int)L.idx.size();
    if (L.abort || L.k + 1 >= n) break;
    Fiber& next = L.fibers[L.idx[L.k + 1]];
    if (next.started || next.st != READY) break;
    L.k++;
    next.started = true;
    next.stack = L.running->stack;
    L.running = &next;
    cur = &next.t;
  }
  L.retired = L.running->stack;
#if EMU_ASAN
  __sanitizer_start_switch_fiber(nullptr, L.sched_bottom, L.sched_size);
#endif
  ctx_switch(&L.running->ctx, &L.sched);
  abort();  // a finished runner is never resumed
}

// ctx_init prepares f to start at fiber_main on the given stack.
void ctx_init(Fiber& f, char* stack, size_t size) {
#if EMU_ASM_SWITCH
  // emu_switch pops six registers then returns: put fiber_main's address
  // at a 16-byte aligned slot so the callee sees a call-aligned stack.
  uintptr_t top = ((uintptr_t)(stack + size) & ~(uintptr_t)15) - 16;
  void** sp = (void**)top;
  sp[0] = (void*)&fiber_main;
  sp[1] = nullptr;
  sp -= 6;
  for (int i = 0; i < 6; i++) sp[i] = nullptr;
  f.ctx.sp = sp;
#else
  getcontext(&f.ctx.uc);
  f.ctx.uc.uc_stack.ss_sp = stack;
  f.ctx.uc.uc_stack.ss_size = size;
  f.ctx.uc.uc_link = nullptr;
  makecontext(&f.ctx.uc, fiber_main, 0);
#endif
}

// take_stack returns a stack no parked thread or running runner uses.
char* take_stack() {
  if (L.free_stacks.empty()) {
    void* p = mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      perror("emu: mmap stack");
      exit(3);
    }
    mprotect(p, 4096, PROT_NONE);  // guard page: a stack overflow faults
    L.stacks.push_back((char*)p);
    L.free_stacks.push_back((char*)p);
  }
  char* s = L.free_stacks.back();
  L.free_stacks.pop_back();
  return s;
}

// run_block runs every thread of the current block to completion.
void run_block(int order, std::mt19937* rng) {
  int n = (int)L.fibers.size();
  for (int i = 0; i < n; i++) {
    Fiber& f = L.fibers[i];
    f.st = READY;
    f.started = false;
    f.stack = nullptr;
    f.shfl_count = 0;
    f.line = 0;
  }
  for (auto& w : L.warps) w.arrived = 0;
  L.block_arrived = 0;
  L.idx.resize(n);
  std::vector<int>& idx = L.idx;
  for (int i = 0; i < n; i++) idx[i] = order == 1 ? n - 1 - i : i;
  int done = 0;
  while (done < n && !L.abort) {
    if (order == 2) std::shuffle(idx.begin(), idx.end(), *rng);
    bool progress = false;
    for (L.k = 0; L.k < n && !L.abort; L.k++) {
      Fiber* f = &L.fibers[idx[L.k]];
      if (f->st != READY) continue;
      progress = true;
      if (!f->started) {
        f->started = true;
        f->stack = take_stack();
        ctx_init(*f, f->stack, kStack);
      }
      L.running = f;
      cur = &f->t;
      int k0 = L.k;
#if EMU_ASAN
      void* fs = nullptr;
      __sanitizer_start_switch_fiber(&fs, f->stack, kStack);
      ctx_switch(&L.sched, &f->ctx);
      __sanitizer_finish_switch_fiber(fs, nullptr, nullptr);
#else
      ctx_switch(&L.sched, &f->ctx);
#endif
      // the runner may have gone on through fibers idx[k0+1..L.k]
      for (int j = k0; j <= L.k; j++) done += L.fibers[idx[j]].st == DONE;
      if (L.retired) {
        L.free_stacks.push_back(L.retired);
        L.retired = nullptr;
      }
    }
    if (!progress && done < n && !L.abort) {
      // Nobody can run: a barrier that cannot complete.
      std::string msg = "deadlock: ";
      int shown = 0;
      for (auto& f : L.fibers) {
        if (f.st == DONE || shown >= 4) continue;
        char b[128];
        snprintf(b, sizeof b, "thread %u waits at %s line %d; ", f.t.tid.x,
                 f.st == WAIT_BLOCK ? "__syncthreads" : "a warp collective", f.line);
        msg += b;
        shown++;
      }
      int exited = 0;
      for (auto& f : L.fibers) exited += f.st == DONE;
      msg += std::to_string(exited) + " of " + std::to_string(n) + " threads exited";
      cur = nullptr;
      fail(msg);
    }
  }
}

}  // namespace

void syncthreads(int line) {
  Fiber* f = L.running;
  if (L.block_arrived == 0) {
    L.block_line = line;
  } else if (L.block_line != line) {
    fail("__syncthreads at line " + std::to_string(line) + " while other threads wait at line " +
         std::to_string(L.block_line) + " (divergent barrier)");
    yield();
    return;
  }
  f->st = WAIT_BLOCK;
  f->line = line;
  if (++L.block_arrived == (int)L.fibers.size()) {
    L.block_arrived = 0;
    for (auto& g : L.fibers)
      if (g.st == WAIT_BLOCK) g.st = READY;
  }
  yield();
}

// warp_arrive parks f at a warp collective until every lane has arrived;
// the last lane to arrive does not park, and gets true.
static bool warp_arrive(Fiber* f, int line, unsigned mask) {
  Warp& w = L.warps[f->warp];
  if (mask != 0xffffffffu) {
    fail("warp collective with a partial mask is not supported by the emulator");
    yield();
    return false;
  }
  if (w.n != 32) {
    fail("warp collective in a partial warp (blockDim not a multiple of 32)");
    yield();
    return false;
  }
  if (w.arrived == 0) {
    w.line = line;
  } else if (w.line != line) {
    fail("warp collective at line " + std::to_string(line) + " while other lanes wait at line " +
         std::to_string(w.line) + " (divergent warp)");
    yield();
    return false;
  }
  f->line = line;
  if (++w.arrived == w.n) {  // last lane: release the others and keep running
    w.arrived = 0;
    for (int i = f->warp * 32, e = std::min(i + 32, (int)L.fibers.size()); i < e; i++)
      if (L.fibers[i].st == WAIT_WARP) L.fibers[i].st = READY;
    return true;
  }
  f->st = WAIT_WARP;
  yield();
  return false;
}

void syncwarp(int line, unsigned mask) {
  Fiber* f = L.running;
  warp_arrive(f, line, mask);
  f->shfl_count++;
}

uint64_t warp_exchange(int line, unsigned mask, uint64_t v, int kind, int arg) {
  Fiber* f = L.running;
  Warp& w = L.warps[f->warp];
  int ph = f->shfl_count & 1;
  w.slot[ph][f->lane] = v;
  warp_arrive(f, line, mask);
  f->shfl_count++;
  int src = f->lane;
  switch (kind) {
    case SHFL_XOR: src = f->lane ^ arg; break;
    case SHFL_DOWN: src = f->lane + arg; break;
    case SHFL_UP: src = f->lane - arg; break;
    case SHFL_IDX: src = arg & 31; break;
  }
  if (src < 0 || src >= 32) src = f->lane;
  return w.slot[ph][src];
}

void warp_fold(int line, const void* v, size_t size, void (*fold)(void* ctx, void* vals), void* ctx, void* out) {
  Fiber* f = L.running;
  Warp& w = L.warps[f->warp];
  int ph = f->shfl_count & 1;
  if (size > sizeof w.wide[ph][0]) {
    fail("warp_fold of a value wider than 48 bytes");
    yield();
    return;
  }
  // lane i's value at vals + i*size: the fold sees a dense array of T
  unsigned char* vals = &w.wide[ph][0][0];
  memcpy(vals + f->lane * size, v, size);
  bool last = warp_arrive(f, line, 0xffffffffu);
  f->shfl_count++;
  if (L.abort) return;
  if (last) fold(ctx, vals);  // once per warp, before any lane reads
  memcpy(out, vals + f->lane * size, size);
}

void fail_kernel(const char* msg) { fail(msg); }

void cp_async(void* dst, const void* src, int bytes, int src_bytes) {
  if ((uintptr_t)dst % bytes != 0 || (uintptr_t)src % bytes != 0) {
    fail("cp.async of " + std::to_string(bytes) + " bytes: source or destination not aligned to its size");
    return;
  }
  L.running->copies.push_back(Fiber::Copy{dst, src, bytes, src_bytes, -1});
}

void cp_async_commit() {
  Fiber* f = L.running;
  for (auto& c : f->copies)
    if (c.group < 0) c.group = f->groups;
  f->groups++;
}

// cp_async_wait lands every copy of the groups older than the n newest
// committed ones (the open group is not waited for, as on the GPU).
void cp_async_wait(int n) {
  Fiber* f = L.running;
  size_t keep = 0;
  for (size_t i = 0; i < f->copies.size(); i++) {
    Fiber::Copy c = f->copies[i];
    if (c.group >= 0 && c.group < f->groups - n) {
      memcpy(c.dst, c.src, c.src_bytes);
      memset((char*)c.dst + c.src_bytes, 0, c.bytes - c.src_bytes);
    } else {
      f->copies[keep++] = c;
    }
  }
  f->copies.resize(keep);
}

// run_grid runs body (the kernel call) for every thread of every block and
// returns the first error ("" if none).
std::string run_grid(const std::string& name, std::function<void()> body, dim3 g, dim3 b, int order,
                     uint32_t seed) {
  size_t nthreads = (size_t)b.x * b.y * b.z;
  L.kernel = name;
  L.err.clear();
  L.abort = false;
  L.fibers.assign(nthreads, Fiber{});
  L.warps.assign((nthreads + 31) / 32, Warp{});
  for (size_t i = 0; i < nthreads; i++) {
    Fiber& f = L.fibers[i];
    f.t.tid = uint3{(unsigned)(i % b.x), (unsigned)(i / b.x % b.y), (unsigned)(i / b.x / b.y)};
    f.warp = (int)(i / 32);
    f.lane = (int)(i % 32);
  }
  for (size_t w = 0; w < L.warps.size(); w++) L.warps[w].n = (int)std::min<size_t>(32, nthreads - w * 32);
  L.free_stacks = L.stacks;  // no thread of an earlier launch is left parked
  L.retired = nullptr;
  block_dim = b;
  grid_dim = g;
  L.body = std::move(body);
  std::mt19937 rng(seed);
  uint64_t nblocks = (uint64_t)g.x * g.y * g.z;
  for (uint64_t i = 0; i < nblocks && !L.abort; i++) {
    uint64_t j = order == 1 ? nblocks - 1 - i : i;
    block_idx = uint3{(unsigned)(j % g.x), (unsigned)(j / g.x % g.y), (unsigned)(j / g.x / g.y)};
    run_block(order, &rng);
  }
  cur = nullptr;
  return L.err;
}

}  // namespace emu
