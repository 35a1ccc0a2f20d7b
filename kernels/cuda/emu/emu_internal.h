// emu_internal.h: what the emulator's server (emu_server.cpp) needs from
// its thread model (fibers.cpp).
#pragma once
#include <stdint.h>

#include <functional>
#include <string>

#include "cuda_emu.h"

namespace emu {
// run_grid runs body (the kernel call, reading emu::cur etc.) for every
// thread of every block of the grid, blocks one after another. order: 0
// forward, 1 reverse, 2 shuffled (seeded). Returns the first error, or "".
std::string run_grid(const std::string& name, std::function<void()> body, dim3 grid, dim3 block, int order,
                     uint32_t seed);
}  // namespace emu
