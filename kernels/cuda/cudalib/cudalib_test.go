package cudalib

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// layout makes files (and symlinks "link -> target") under root.
func layout(t *testing.T, root string, files ...string) {
	t.Helper()
	for _, f := range files {
		link, target, isLink := strings.Cut(f, " -> ")
		p := filepath.Join(root, link)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if isLink {
			err = os.Symlink(target, p)
		} else {
			err = os.WriteFile(p, []byte("not a library"), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func fakeEnv(root string, env map[string]string, ldconfig string, sites ...string) *Env {
	for i, s := range sites {
		sites[i] = filepath.Join(root, s)
	}
	return &Env{
		Getenv:       func(k string) string { return env[k] },
		Ldconfig:     func() string { return ldconfig },
		SitePackages: func() []string { return sites },
		Root:         root,
	}
}

func paths(fs []Found, root string) []string {
	var out []string
	for _, f := range fs {
		out = append(out, strings.TrimPrefix(f.Path, root))
	}
	return out
}

// TestFindLayouts builds the layouts argrl meets in a temp dir and checks
// which file each library resolves to, and how it says so.
func TestFindLayouts(t *testing.T) {
	root := t.TempDir()
	// the lent H200 machine: the driver in /usr/local/nvidia/lib64 (not in
	// the loader's cache), cuBLAS and NCCL only as pip wheels of a venv
	// python3 is, plus an old toolkit
	layout(t, root,
		"usr/local/nvidia/lib64/libcuda.so.1 -> libcuda.so.580.159.03",
		"usr/local/nvidia/lib64/libcuda.so.580.159.03",
		"venv/site-packages/nvidia/cu13/lib/libcublas.so.13 -> libcublas.so.13.1.0.3",
		"venv/site-packages/nvidia/cu13/lib/libcublas.so.13.1.0.3",
		"venv/site-packages/nvidia/cu13/lib/libcublasLt.so.13",
		"venv/site-packages/nvidia/nccl/lib/libnccl.so.2",
		"usr/local/cuda-11.8/lib64/libcublas.so.11",
		"usr/local/cuda-12.10/lib64/libcublas.so.12",
		"usr/local/cuda-12.4/lib64/libcublas.so.12",
	)
	e := fakeEnv(root, nil, "", "venv/site-packages")

	drv, err := e.Find(Driver, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(drv, root); len(got) != 1 || got[0] != "/usr/local/nvidia/lib64/libcuda.so.1" {
		t.Errorf("driver: %v", got)
	}
	if drv[0].Version != "580.159.03" || drv[0].Where != "the driver's folder" {
		t.Errorf("driver: version %q, where %q", drv[0].Version, drv[0].Where)
	}

	// a CUDA 13 driver: the toolkits come first (newest first: 12.10
	// before 12.4 before 11.8), then the wheel's cuBLAS 13
	bl, err := e.Find(CuBLAS, 13)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/usr/local/cuda-12.10/lib64/libcublas.so.12", "/usr/local/cuda-12.4/lib64/libcublas.so.12",
		"/usr/local/cuda-11.8/lib64/libcublas.so.11", "/venv/site-packages/nvidia/cu13/lib/libcublas.so.13"}
	if got := paths(bl, root); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("cuBLAS for CUDA 13:\n got %v\nwant %v", got, want)
	}
	if w := bl[3]; w.Version != "13.1.0.3" || w.CUDA != 13 || !strings.Contains(w.Where, "pip wheel nvidia/cu13") {
		t.Errorf("wheel cuBLAS: %+v", w)
	}
	// a CUDA 12 driver never gets cuBLAS 13
	bl, _ = e.Find(CuBLAS, 12)
	for _, f := range bl {
		if f.CUDA > 12 {
			t.Errorf("CUDA 12 driver offered %s", f.Path)
		}
	}
	if lt, err := e.Find(CuBLASLt, 13); err != nil || len(lt) != 1 || !strings.HasSuffix(lt[0].Path, "nvidia/cu13/lib/libcublasLt.so.13") {
		t.Errorf("cuBLASLt: %v %v", lt, err)
	}
	if nc, err := e.Find(NCCL, 0); err != nil || len(nc) != 1 || !strings.HasSuffix(nc[0].Path, "nvidia/nccl/lib/libnccl.so.2") {
		t.Errorf("NCCL: %v %v", nc, err)
	}

	// LD_LIBRARY_PATH and the loader's cache come before everything else
	layout(t, root, "ld/libcublas.so.12", "cache/libcublas.so.11")
	e = fakeEnv(root, map[string]string{"LD_LIBRARY_PATH": filepath.Join(root, "ld")},
		"1 libs found in cache `/etc/ld.so.cache'\n\tlibcublas.so.11 (libc6,x86-64) => "+filepath.Join(root, "cache/libcublas.so.11")+"\n",
		"venv/site-packages")
	bl, _ = e.Find(CuBLAS, 13)
	if got := paths(bl, root); len(got) < 2 || got[0] != "/ld/libcublas.so.12" || got[1] != "/cache/libcublas.so.11" || bl[1].Where != "ldconfig" {
		t.Errorf("LD_LIBRARY_PATH, then ldconfig: %v", got)
	}

	// an override is that file and nothing else; a missing one is an error
	// naming the variable
	e = fakeEnv(root, map[string]string{"ARGRL_LIBCUBLAS": filepath.Join(root, "usr/local/cuda-11.8/lib64/libcublas.so.11")}, "")
	bl, err = e.Find(CuBLAS, 13)
	if err != nil || len(bl) != 1 || bl[0].Where != "ARGRL_LIBCUBLAS" {
		t.Errorf("override: %v %v", bl, err)
	}
	e = fakeEnv(root, map[string]string{"ARGRL_LIBNCCL": filepath.Join(root, "nope.so")}, "")
	if _, err := e.Find(NCCL, 0); err == nil || !strings.Contains(err.Error(), "ARGRL_LIBNCCL=") {
		t.Errorf("missing override: %v", err)
	}
}

// TestFindNothing checks the message when no place has the library.
func TestFindNothing(t *testing.T) {
	root := t.TempDir()
	layout(t, root, "usr/local/cuda-12.4/lib64/libcublas.so.12")
	e := fakeEnv(root, nil, "")
	_, err := e.Find(CuBLAS, 11) // only a cuBLAS 12, for a CUDA 11 driver
	if err == nil {
		t.Fatal("found a cuBLAS 12 for a CUDA 11 driver")
	}
	for _, w := range []string{"no cuBLAS library for a CUDA 11 driver", "libcublas.so.13, libcublas.so.12, libcublas.so.11",
		"/usr/local/nvidia/lib64", "usr/local/cuda-12.4/lib64", "set ARGRL_LIBCUBLAS"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("message lacks %q:\n%v", w, err)
		}
	}
	if _, err := e.Find(Driver, 0); err == nil || !strings.Contains(err.Error(), "no CUDA driver library (libcuda.so.1)") {
		t.Errorf("driver: %v", err)
	}
}
