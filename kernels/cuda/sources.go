package cuda

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"regexp"
	"sort"
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

var globalRE = regexp.MustCompile(`extern "C" __global__ void (?:__launch_bounds__\([^)]*\)\s*)?([A-Za-z_][A-Za-z0-9_]*)\(`)

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
			out[n] = append(out[n], m[1])
		}
	}
	return out, nil
}
