package cuda

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// kernelSources holds the CUDA sources (compiled to PTX by gen.sh, and by
// g++ for the emulator) and the emulator itself. Embedding them lets the Go
// build cache and go test's cache see every edit, and lets any package's
// tests build the emulator (NewEmulated).
//
//go:embed *.cu *.cuh gen.sh emu/*.h emu/*.cpp emu/*.cu
var kernelSources embed.FS

// cudaSources lists the files that make the PTX (*.cu, *.cuh and gen.sh,
// whose flags matter too), sorted.
func cudaSources() ([]string, error) {
	names := []string{"gen.sh"}
	for _, pat := range []string{"*.cu", "*.cuh"} {
		m, err := fs.Glob(kernelSources, pat)
		if err != nil {
			return nil, err
		}
		names = append(names, m...)
	}
	sort.Strings(names)
	return names, nil
}

// sourcesDigest is the SHA-256 over the PTX sources as "name\n<sha256 of
// contents>\n" lines; gen.sh records the same value in ptx/SOURCES.
func sourcesDigest() (string, error) {
	names, err := cudaSources()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, n := range names {
		data, err := kernelSources.ReadFile(n)
		if err != nil {
			return "", err
		}
		s := sha256.Sum256(data)
		b.WriteString(n + "\n" + hex.EncodeToString(s[:]) + "\n")
	}
	s := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(s[:]), nil
}

// globalRE matches a kernel's declaration: `extern "C" __global__ void`,
// its __launch_bounds__ (the most threads per block it is launched with;
// every kernel of kernels/cuda/*.cu declares one), its name.
var globalRE = regexp.MustCompile(`extern "C" __global__ void (?:__launch_bounds__\(\s*([0-9]+)[^)]*\)\s+)?([A-Za-z_][A-Za-z0-9_]*)\(`)

// kernelNames lists every kernel (extern "C" __global__ function) per
// source file, in file order.
func kernelNames() (map[string][]string, error) {
	names, err := cudaSources()
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, n := range names {
		if !strings.HasSuffix(n, ".cu") {
			continue
		}
		data, err := kernelSources.ReadFile(n)
		if err != nil {
			return nil, err
		}
		for _, m := range globalRE.FindAllStringSubmatch(string(data), -1) {
			out[n] = append(out[n], m[2])
		}
	}
	return out, nil
}

// kernelBounds maps each kernel of the PTX sources to the thread count of
// its __launch_bounds__ (0 for a kernel that declares none, which
// TestLaunchBounds and make cuda-check refuse).
func kernelBounds() (map[string]int, error) {
	names, err := cudaSources()
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, n := range names {
		if !strings.HasSuffix(n, ".cu") {
			continue
		}
		data, err := kernelSources.ReadFile(n)
		if err != nil {
			return nil, err
		}
		for _, m := range globalRE.FindAllStringSubmatch(string(data), -1) {
			b := 0
			if m[1] != "" {
				if b, err = strconv.Atoi(m[1]); err != nil {
					return nil, fmt.Errorf("%s: kernel %s: launch bounds %q: %w", n, m[2], m[1], err)
				}
			}
			out[m[2]] = b
		}
	}
	return out, nil
}
