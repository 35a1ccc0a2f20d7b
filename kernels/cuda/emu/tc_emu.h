// tc_emu.h: the emulator's bodies of the tensor-core primitives of tc.cuh,
// lane by lane after the PTX ISA's fragment layouts (the table in tc.cuh).
// mma and ldmatrix are warp collectives (every lane of the warp, from the
// same source line); cp.async copies are queued per thread and land only
// when the thread waits for their group, so a read before the wait sees
// the old shared memory, as a race would on the GPU.
#pragma once

namespace emu {

void fail_kernel(const char* msg);  // records an error for the running kernel

inline float bf16_bits_to_f32(unsigned h) {
  unsigned u = (h & 0xffffu) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// mma_m16n8k16: d = a·b + c over the warp (bf16 inputs, f32 accumulation).
// Each output is c + fl32(Σ_{k=0..15} a·b): the tile's 16 products (exact
// in double) are summed in k order in double and rounded once to float
// before they meet the accumulator, as a GPU's tensor core reduces a
// k-tile's products before it adds C. So where a long sum is cut into
// k-tiles changes its bits here as it does on the GPU (whose own rounding
// is not modelled): a kernel that must give a sequence the same bits
// wherever it sits (packed rows, decoding) has to cut its sums at the same
// places, and the emulator's tests see it when it does not. (Summing c
// first and the products one by one in float would make the cut invisible.)
inline void mma_m16n8k16(int line, float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                         const float (&c)[4]) {
  struct Lane {
    unsigned a[4], b[2];
    float c[4];
  };
  struct Fold {
    static void run(void*, void* vals) {
      Lane* L = static_cast<Lane*>(vals);
      float A[16][16], B[16][8], C[16][8];
      for (int l = 0; l < 32; l++) {
        int g = l >> 2, t = l & 3;
        for (int h = 0; h < 2; h++) {
          A[g][2 * t + h] = bf16_bits_to_f32(L[l].a[0] >> (16 * h));
          A[g + 8][2 * t + h] = bf16_bits_to_f32(L[l].a[1] >> (16 * h));
          A[g][2 * t + 8 + h] = bf16_bits_to_f32(L[l].a[2] >> (16 * h));
          A[g + 8][2 * t + 8 + h] = bf16_bits_to_f32(L[l].a[3] >> (16 * h));
          B[2 * t + h][g] = bf16_bits_to_f32(L[l].b[0] >> (16 * h));
          B[2 * t + 8 + h][g] = bf16_bits_to_f32(L[l].b[1] >> (16 * h));
          C[g][2 * t + h] = L[l].c[h];
          C[g + 8][2 * t + h] = L[l].c[2 + h];
        }
      }
      for (int l = 0; l < 32; l++) {
        int g = l >> 2, t = l & 3;
        for (int e = 0; e < 4; e++) {
          int m = g + 8 * (e >> 1), n = 2 * t + (e & 1);
          double s = 0.0;
          for (int k = 0; k < 16; k++) s += (double)A[m][k] * (double)B[k][n];
          L[l].c[e] = C[m][n] + (float)s;
        }
      }
    }
  };
  Lane in, out;
  memcpy(in.a, a, sizeof in.a);
  memcpy(in.b, b, sizeof in.b);
  memcpy(in.c, c, sizeof in.c);
  warp_fold(line, &in, sizeof in, &Fold::run, nullptr, &out);
  memcpy(d, out.c, sizeof out.c);
}

// ldmatrix: count (1, 2, 4) 8×8 bf16 matrices; lane 8i+r passes row r of
// matrix i. Rows must be 16-byte aligned (the GPU faults otherwise).
inline void ldmatrix(int line, unsigned* r, int count, bool trans, const unsigned short* p) {
  struct Lane {
    const unsigned short* p;
    unsigned r[4];
  };
  struct Ctx {
    int count;
    bool trans;
  } ctx{count, trans};
  struct Fold {
    static void run(void* c, void* vals) {
      Ctx& x = *static_cast<Ctx*>(c);
      Lane* L = static_cast<Lane*>(vals);
      unsigned short M[4][8][8];
      for (int i = 0; i < x.count; i++)
        for (int row = 0; row < 8; row++) {
          const unsigned short* q = L[8 * i + row].p;
          if ((uintptr_t)q % 16 != 0) {
            fail_kernel("ldmatrix: a row address is not 16-byte aligned");
            memset(M[i][row], 0, sizeof M[i][row]);
            continue;
          }
          memcpy(M[i][row], q, 16);
        }
      for (int l = 0; l < 32; l++) {
        int g = l >> 2, t = l & 3;
        for (int i = 0; i < x.count; i++) {
          unsigned lo = x.trans ? M[i][2 * t][g] : M[i][g][2 * t];
          unsigned hi = x.trans ? M[i][2 * t + 1][g] : M[i][g][2 * t + 1];
          L[l].r[i] = lo | (hi << 16);
        }
      }
    }
  };
  Lane in{p, {0, 0, 0, 0}}, out;
  warp_fold(line, &in, sizeof in, &Fold::run, &ctx, &out);
  memcpy(r, out.r, sizeof(unsigned) * count);
}

// cp_async queues a copy of bytes (16) from src to dst for the calling
// thread: src_bytes of src, the rest zero-filled. Implemented in fibers.cpp.
void cp_async(void* dst, const void* src, int bytes, int src_bytes);
void cp_async_commit();
void cp_async_wait(int n);

}  // namespace emu
