//go:build unix

package kernels_test

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/kernels/kerneltest"
)

// mmapRO writes data to a file and maps it PROT_READ for the rest of the
// test: a write through the mapping is a SIGSEGV.
func mmapRO(t *testing.T, data []byte) []byte {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "ro-*.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 {
		return []byte{}
	}
	m, err := unix.Mmap(int(f.Fd()), 0, len(data), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap %s: %v", filepath.Base(f.Name()), err)
	}
	t.Cleanup(func() {
		if err := unix.Munmap(m); err != nil {
			t.Errorf("munmap: %v", err)
		}
	})
	return m
}

// TestCPUReadOnlyMmap runs the read-only suite with every mapped buffer in
// a PROT_READ mmap of a file, so an op that wrote one would crash the test
// binary, after checking that such a write does fault.
func TestCPUReadOnlyMmap(t *testing.T) {
	m := mmapRO(t, []byte{1, 2, 3, 4})
	func() {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if recover() == nil {
				t.Fatalf("writing a PROT_READ mapping did not fault")
			}
		}()
		m[0] = 9
	}()
	kerneltest.RunReadOnly(t, kernels.NewCPU(), mmapRO)
}
