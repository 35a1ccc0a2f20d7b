package cuda

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPTXTensorCores assembles the committed attention PTX for sm_90 with
// ptxas and checks in cuobjdump --dump-sass that every tensor-core
// attention kernel (forward, backward) runs on tensor cores (HMMA instructions) and spills no
// register. It needs ptxas and cuobjdump (CUDA toolkit; make cuda-check
// runs it): skipped without them, failing instead under CI=1.
func TestPTXTensorCores(t *testing.T) {
	var tools []string
	for _, tool := range []string{"ptxas", "cuobjdump"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s not found: install the CUDA toolkit (nvidia-cuda-toolkit)", tool)
			}
			t.Skipf("%s not found: the SASS check needs the CUDA toolkit", tool)
		}
		tools = append(tools, p)
	}
	// the dump is one section per kernel, each opened by its "Function : name" line
	hmma := map[string]int{}
	for _, src := range []string{"attn_tc", "attn_tc_bwd"} {
		cubin := filepath.Join(t.TempDir(), src+".cubin")
		ptx := fmt.Sprintf("ptx/sm_%d/%s.ptx", ptxArchs[0], src)
		log, err := exec.Command(tools[0], "-arch=sm_90", "-v", "-o", cubin, ptx).CombinedOutput()
		if err != nil {
			t.Fatalf("ptxas -arch=sm_90 %s: %v\n%s", ptx, err, log)
		}
		if m := regexp.MustCompile(`[1-9][0-9]* bytes spill`).FindString(string(log)); m != "" {
			t.Errorf("ptxas -arch=sm_90 %s: %s:\n%s", ptx, m, log)
		}
		sass, err := exec.Command(tools[1], "--dump-sass", cubin).CombinedOutput()
		if err != nil {
			t.Fatalf("cuobjdump --dump-sass: %v\n%s", err, sass)
		}
		fn := ""
		for _, line := range strings.Split(string(sass), "\n") {
			if i := strings.Index(line, "Function : "); i >= 0 {
				fn = strings.TrimSpace(line[i+len("Function : "):])
			}
			if strings.Contains(line, "HMMA.16816.F32.BF16") {
				hmma[fn]++
			}
		}
	}
	for _, d := range []int{16, 32, 64, 128} {
		for _, k := range []string{"attn_tc_fwd%d", "attn_tc_bwd_dq%d", "attn_tc_bwd_dkdv%d"} {
			k = fmt.Sprintf(k, d)
			if hmma[k] == 0 {
				t.Errorf("%s: no HMMA.16816.F32.BF16 instruction in its sm_90 SASS", k)
			}
			t.Logf("%s: %d HMMA.16816.F32.BF16 instructions at sm_90", k, hmma[k])
		}
	}
}
