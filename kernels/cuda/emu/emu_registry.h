// emu_registry.h: the table of kernels the emulator can launch. The Go side
// generates emu_registry.cpp, which includes every .cu source and lists each
// `extern "C" __global__` function with EMU_KERNEL(name).
#pragma once
#include <stdint.h>
#include <string.h>

#include <functional>
#include <string>
#include <type_traits>
#include <utility>

namespace emu {

struct KernelEntry {
  const char* name;
  std::string sig;  // one letter per parameter: p pointer, i 32-bit int, f float, l 64-bit int
  std::function<void(const uint64_t*)> call;
};

template <class T>
constexpr char arg_kind() {
  static_assert(std::is_pointer<T>::value || std::is_integral<T>::value || std::is_same<T, float>::value,
                "kernel parameters must be pointers, integers or float");
  return std::is_pointer<T>::value ? 'p' : std::is_same<T, float>::value ? 'f' : sizeof(T) == 8 ? 'l' : 'i';
}

template <class T>
T arg_decode(uint64_t v) {
  if constexpr (std::is_pointer<T>::value) {
    return reinterpret_cast<T>(static_cast<uintptr_t>(v));
  } else {
    T t;
    memcpy(&t, &v, sizeof(T));  // little-endian: the low bytes hold the value
    return t;
  }
}

template <class... A, size_t... I>
void arg_call(void (*f)(A...), const uint64_t* a, std::index_sequence<I...>) {
  f(arg_decode<A>(a[I])...);
}

template <class... A>
KernelEntry make_entry(const char* name, void (*f)(A...)) {
  return KernelEntry{name, std::string{arg_kind<A>()...},
                     [f](const uint64_t* a) { arg_call(f, a, std::index_sequence_for<A...>{}); }};
}

extern const KernelEntry kernel_table[];
extern const int kernel_count;

}  // namespace emu

#define EMU_KERNEL(name) emu::make_entry(#name, &name)
