package cuda

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// PTX layout: ptx/sm_<arch>/<source>.ptx, one per .cu file and
// architecture of ptxArchs, plus ptx/SOURCES (the sources digest, then the
// nvcc version). gen.sh writes them; the cuda build embeds them all
// (device_cuda.go), loads the set pickArch chooses for the GPU at hand, and
// the driver JIT-compiles it (compute capability 8.0 or newer).

var (
	entryRE = regexp.MustCompile(`\.entry\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(([^)]*)\)`)
	paramRE = regexp.MustCompile(`\.param\s+\.(\w+)`)
)

// ptxEntries returns each kernel's parameter kinds as checkSignature wants
// them: 'u' for any 64-bit value (pointer or 64-bit int), 'i' for a 32-bit
// integer, 'f' for f32.
func ptxEntries(ptx string) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range entryRE.FindAllStringSubmatch(ptx, -1) {
		var sig strings.Builder
		for _, p := range paramRE.FindAllStringSubmatch(m[2], -1) {
			switch p[1] {
			case "u64", "s64", "b64":
				sig.WriteByte('u')
			case "u32", "s32", "b32":
				sig.WriteByte('i')
			case "f32":
				sig.WriteByte('f')
			default:
				return nil, fmt.Errorf("kernel %s: unsupported PTX parameter type .%s", m[1], p[1])
			}
		}
		out[m[1]] = sig.String()
	}
	return out, nil
}

// ptxArchs are the architectures gen.sh compiles for, ascending: sm_80
// (Ampere, and the fallback for any newer GPU) and sm_90 (Hopper: H100,
// H200).
var ptxArchs = []int{80, 90}

// pickArch returns the PTX architecture to load on a GPU of compute
// capability major.minor: the newest of ptxArchs not newer than the device
// (the driver JIT-compiles PTX for its own or any later architecture, never
// an earlier one), or an error when the device is older than all of them.
func pickArch(major, minor int) (int, error) {
	cc := 10*major + minor
	best := 0
	for _, a := range ptxArchs {
		if a <= cc {
			best = a
		}
	}
	if best == 0 {
		return 0, fmt.Errorf("compute capability %d.%d is older than every embedded PTX (sm_%v); argrl's kernels need 8.0 or newer", major, minor, ptxArchs)
	}
	return best, nil
}

var maxntidRE = regexp.MustCompile(`\.entry\s+([A-Za-z_][A-Za-z0-9_]*)\s*\([^)]*\)\s*\.maxntid\s+([0-9]+)\s*,\s*([0-9]+)\s*,\s*([0-9]+)`)

// ptxMaxThreads returns each kernel's .maxntid product, the threads per
// block its __launch_bounds__ allow (kernels without one are absent).
func ptxMaxThreads(ptx string) map[string]int {
	out := map[string]int{}
	for _, m := range maxntidRE.FindAllStringSubmatch(ptx, -1) {
		x, _ := strconv.Atoi(m[2])
		y, _ := strconv.Atoi(m[3])
		z, _ := strconv.Atoi(m[4])
		out[m[1]] = x * y * z
	}
	return out
}
