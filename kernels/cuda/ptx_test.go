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

// TestLaunchBounds checks that every kernel declares __launch_bounds__ (a
// whole number of warps, at most 1,024 threads), that the PTX of every
// architecture carries it as .maxntid, and that the emulator refuses a
// launch over it with an error naming the kernel, as the GPU launcher does
// with the driver's MAX_THREADS_PER_BLOCK.
func TestLaunchBounds(t *testing.T) {
	bounds, err := kernelBounds()
	if err != nil {
		t.Fatal(err)
	}
	kn, err := kernelNames()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for file, kernels := range kn {
		for _, arch := range ptxArchs {
			data, err := os.ReadFile(fmt.Sprintf("ptx/sm_%d/%s.ptx", arch, strings.TrimSuffix(file, ".cu")))
			if err != nil {
				t.Fatalf("%v: run make cuda", err)
			}
			maxnt := ptxMaxThreads(string(data))
			for _, k := range kernels {
				b := bounds[k]
				if b <= 0 || b%32 != 0 || b > 1024 {
					t.Errorf("%s: kernel %s: __launch_bounds__ %d (want a multiple of 32 up to 1024)", file, k, b)
				}
				if maxnt[k] != b {
					t.Errorf("sm_%d %s: kernel %s: .maxntid %d, source says %d: run make cuda", arch, file, k, maxnt[k], b)
				}
				n++
			}
		}
	}
	if n == 0 {
		t.Fatal("no kernels found")
	}
	be := newEmu(t, EmuOptions{})
	d := be.dev.(*emuDevice)
	p, err := d.alloc(4 * 1024)
	if err != nil {
		t.Fatal(err)
	}
	// kv_write is launched with 256 threads at most; 512 is over its bounds
	args := make([]arg, len(d.sigs["kv_write"]))
	for i, c := range []byte(d.sigs["kv_write"]) {
		args[i] = arg{kind: c, v: uint64(p)}
		if c != 'p' {
			args[i].v = 0
		}
	}
	err = d.launch("kv_write", dim3{1, 1, 1}, dim3{512, 1, 1}, args)
	if err == nil || !strings.Contains(err.Error(), "kernel kv_write") || !strings.Contains(err.Error(), "at most 256") {
		t.Fatalf("launch of 512 threads of kv_write (bounds 256): got %v", err)
	}
}

func TestPickArch(t *testing.T) {
	for _, c := range []struct{ major, minor, want int }{
		{8, 0, 80}, {8, 6, 80}, {8, 9, 80}, {9, 0, 90}, {10, 0, 90}, {12, 0, 90},
	} {
		got, err := pickArch(c.major, c.minor)
		if err != nil || got != c.want {
			t.Errorf("pickArch(%d.%d) = %d, %v; want %d", c.major, c.minor, got, err, c.want)
		}
	}
	if _, err := pickArch(7, 5); err == nil || !strings.Contains(err.Error(), "7.5") {
		t.Errorf("pickArch(7.5): got %v, want an error naming 7.5", err)
	}
}
