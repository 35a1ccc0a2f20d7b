package cuda

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestPTXUpToDate fails when a .cu/.cuh source changed after the committed
// PTX was generated: run `make cuda` (kernels/cuda/gen.sh) and commit ptx/.
func TestPTXUpToDate(t *testing.T) {
	rec, err := os.ReadFile("ptx/SOURCES")
	if err != nil {
		t.Fatalf("no generated PTX (%v): run make cuda", err)
	}
	want, err := sourcesDigest()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.SplitN(string(rec), "\n", 2)[0]; got != want {
		t.Fatalf("kernels/cuda/ptx is stale: made from sources %s, sources are now %s; run make cuda", got, want)
	}
}

// TestPTXKernels checks that ptx/ holds exactly the architectures of
// ptxArchs and that every kernel of every source is in their PTX, with the
// parameter list the emulator compiled from the same source (so a launch
// that passes the emulator's signature check passes the GPU's).
func TestPTXKernels(t *testing.T) {
	kn, err := kernelNames()
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("ptx")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"SOURCES": true}
	for _, arch := range ptxArchs {
		want[fmt.Sprintf("sm_%d", arch)] = true
	}
	for _, e := range ents {
		if !want[e.Name()] {
			t.Errorf("ptx/%s is not made by gen.sh (architectures %v): remove it", e.Name(), ptxArchs)
		}
		delete(want, e.Name())
	}
	for name := range want {
		t.Errorf("ptx/%s is missing: run make cuda", name)
	}
	be := newEmu(t, EmuOptions{})
	emuSigs := be.dev.(*emuDevice).sigs
	for file, kernels := range kn {
		for _, arch := range ptxArchs {
			path := fmt.Sprintf("ptx/sm_%d/%s.ptx", arch, strings.TrimSuffix(file, ".cu"))
			data, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("%v: run make cuda", err)
				continue
			}
			if !strings.Contains(string(data), fmt.Sprintf(".target sm_%d", arch)) {
				t.Errorf("%s does not target sm_%d", path, arch)
			}
			entries, err := ptxEntries(string(data))
			if err != nil {
				t.Errorf("%s: %v", path, err)
				continue
			}
			if len(entries) != len(kernels) {
				t.Errorf("%s has %d kernels, %s declares %d", path, len(entries), file, len(kernels))
			}
			for _, k := range kernels {
				sig, ok := entries[k]
				if !ok {
					t.Errorf("%s: kernel %s missing", path, k)
					continue
				}
				args := make([]arg, len(emuSigs[k]))
				for i, c := range []byte(emuSigs[k]) {
					args[i] = arg{kind: c}
				}
				if err := checkSignature(k, sig, args); err != nil {
					t.Errorf("%s: PTX and emulator disagree: %v", path, err)
				}
			}
		}
	}
}
