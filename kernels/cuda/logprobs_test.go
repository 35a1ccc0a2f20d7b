package cuda

import (
	"fmt"
	"strings"
	"testing"
)

// TestLogProbsChunkConstants: the host's chunk size and block size are
// logprobs.cu's (the host sizes the partials and the grid from them).
func TestLogProbsChunkConstants(t *testing.T) {
	src, err := kernelSources.ReadFile("logprobs.cu")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fmt.Sprintf("#define LP_CHUNK %d\n", lpChunk), fmt.Sprintf("#define LP_CHUNK_THREADS %d ", lpChunkThreads),
		fmt.Sprintf("__launch_bounds__(%d) logprobs_chunk(", lpChunkThreads)} {
		if !strings.Contains(string(src), want) {
			t.Errorf("logprobs.cu does not contain %q (ops_nn.go's constants)", want)
		}
	}
}
