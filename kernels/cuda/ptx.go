package cuda

import (
	"fmt"
	"regexp"
	"strings"
)

// PTX layout: ptx/sm_80/<source>.ptx, one per .cu file, plus ptx/SOURCES
// (the sources digest, then the nvcc version). gen.sh writes them; the
// cuda build embeds them (device_cuda.go) and the driver JIT-compiles them
// for the GPU at hand (compute capability 8.0 or newer).

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

// ptxArchs are the architectures gen.sh compiles for.
var ptxArchs = []int{80}
