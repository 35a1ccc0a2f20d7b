// Package cudalib finds the NVIDIA libraries the GPU build opens at run
// time (the binary links none of them): the driver (libcuda.so.1), cuBLAS,
// cuBLASLt and NCCL. It is pure Go and in every build, so that the search
// itself is tested without a GPU; the dlopen stays behind the build tags
// (kernels/cuda, dist).
//
// Where it looks, first match wins, per library:
//  1. the override variable (ARGRL_LIBCUDA, ARGRL_LIBCUBLAS,
//     ARGRL_LIBCUBLASLT, ARGRL_LIBNCCL): that file and nothing else;
//  2. LD_LIBRARY_PATH;
//  3. the dynamic loader's cache (ldconfig -p);
//  4. the driver's own folder, /usr/local/nvidia/lib64 and lib (containers);
//  5. CUDA toolkits: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda, then
//     /usr/local/cuda-* newest first (lib64, targets/*/lib);
//  6. NVIDIA's pip wheels in every site-packages of the machine's python3
//     ($ARGRL_PYTHON overrides which python) and of the usual virtual
//     environments: nvidia/cu13/lib, nvidia/cu12/lib, nvidia/<name>/lib;
//  7. /usr/lib/x86_64-linux-gnu, /usr/lib64, /lib/x86_64-linux-gnu.
//
// Within one place, newer sonames come first (libcublas.so.13 before .12
// and .11); Find skips a cuBLAS or cuBLASLt newer than the driver's CUDA
// major version, which would fail at its first call.
package cudalib

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Lib names one library the GPU build opens.
type Lib struct {
	Name     string   // for messages: "cuBLAS"
	Env      string   // the override variable
	Sonames  []string // newest first
	Wheels   []string // pip wheel folders under site-packages/nvidia
	Versions []int    // the CUDA major version of each soname (0: any)
}

// The libraries.
var (
	Driver   = Lib{Name: "CUDA driver", Env: "ARGRL_LIBCUDA", Sonames: []string{"libcuda.so.1"}, Versions: []int{0}}
	CuBLAS   = Lib{Name: "cuBLAS", Env: "ARGRL_LIBCUBLAS", Sonames: []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"}, Wheels: []string{"cu13", "cu12", "cublas"}, Versions: []int{13, 12, 11}}
	CuBLASLt = Lib{Name: "cuBLASLt", Env: "ARGRL_LIBCUBLASLT", Sonames: []string{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11"}, Wheels: []string{"cu13", "cu12", "cublas"}, Versions: []int{13, 12, 11}}
	NCCL     = Lib{Name: "NCCL", Env: "ARGRL_LIBNCCL", Sonames: []string{"libnccl.so.2"}, Wheels: []string{"cu13", "cu12", "nccl"}, Versions: []int{0}}
)

// Found is one library file the search picked.
type Found struct {
	Path    string // the file to dlopen
	Where   string // how it was found: "ARGRL_LIBCUBLAS", "ldconfig", "pip wheel (/…/site-packages)", …
	Version string // from the file the soname points to ("13.1.0.3"), "" if the name has none
	CUDA    int    // the soname's CUDA major version (0: not tied to one)
}

func (f Found) String() string {
	v := ""
	if f.Version != "" {
		v = " " + f.Version
	}
	return fmt.Sprintf("%s%s (%s)", f.Path, v, f.Where)
}

// Env is where the search looks; System fills it from this machine, tests
// from a fake layout.
type Env struct {
	Getenv       func(string) string
	Ldconfig     func() string   // `ldconfig -p` output
	SitePackages func() []string // python3's site-packages folders
	Root         string          // prefix for the fixed folders ("" on a real machine)
}

// System is the search on this machine: its environment, `ldconfig -p`,
// and python3's site-packages (each command run once, lazily, with a
// 10-second limit).
func System() *Env {
	var ld, sp *string
	var sites []string
	return &Env{
		Getenv: os.Getenv,
		Ldconfig: func() string {
			if ld == nil {
				s := run("ldconfig", "-p")
				if s == "" {
					s = run("/sbin/ldconfig", "-p")
				}
				ld = &s
			}
			return *ld
		},
		SitePackages: func() []string {
			if sp == nil {
				py := os.Getenv("ARGRL_PYTHON")
				if py == "" {
					py = "python3"
				}
				s := run(py, "-c", "import site, sys\nfor p in site.getsitepackages() + [site.getusersitepackages()] + sys.path: print(p)")
				sp = &s
				for _, l := range strings.Split(s, "\n") {
					if l = strings.TrimSpace(l); l != "" {
						sites = append(sites, l)
					}
				}
			}
			return sites
		},
	}
}

func run(name string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// venvGlobs are virtual environments python3 may not be: the lent GPU
// machine's PyTorch lives in /opt/torch/.venv.
var venvGlobs = []string{
	"/opt/*/.venv/lib/python3*/site-packages",
	"/opt/*/venv/lib/python3*/site-packages",
	"/usr/local/lib/python3*/dist-packages",
	"/usr/local/lib/python3*/site-packages",
	"/usr/lib/python3/dist-packages",
}

// ldconfigRE matches a line of `ldconfig -p`: "\tlibcuda.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcuda.so.1".
var ldconfigRE = regexp.MustCompile(`(?m)^\s*\S+ \([^)]*\) => (\S+)\s*$`)

// place is one folder to look in, and how to say it.
type place struct{ dir, where string }

func (e *Env) places(l Lib) []place {
	var ps []place
	for _, d := range filepath.SplitList(e.Getenv("LD_LIBRARY_PATH")) {
		if d != "" {
			ps = append(ps, place{d, "LD_LIBRARY_PATH"})
		}
	}
	// the loader's cache comes as whole paths; its folders are places too
	for _, m := range ldconfigRE.FindAllStringSubmatch(e.Ldconfig(), -1) {
		ps = append(ps, place{filepath.Dir(m[1]), "ldconfig"})
	}
	for _, d := range []string{"/usr/local/nvidia/lib64", "/usr/local/nvidia/lib"} {
		ps = append(ps, place{e.Root + d, "the driver's folder"})
	}
	var tk []string
	for _, v := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if d := e.Getenv(v); d != "" {
			tk = append(tk, d)
		}
	}
	tk = append(tk, e.Root+"/usr/local/cuda")
	vers, _ := filepath.Glob(e.Root + "/usr/local/cuda-*")
	sort.Slice(vers, func(i, j int) bool { return versionLess(vers[j], vers[i]) })
	tk = append(tk, vers...)
	for _, d := range tk {
		ps = append(ps, place{filepath.Join(d, "lib64"), "CUDA toolkit " + d})
		t, _ := filepath.Glob(filepath.Join(d, "targets", "*", "lib"))
		for _, x := range t {
			ps = append(ps, place{x, "CUDA toolkit " + d})
		}
	}
	sites := append([]string(nil), e.SitePackages()...)
	for _, g := range venvGlobs {
		m, _ := filepath.Glob(e.Root + g)
		sites = append(sites, m...)
	}
	seen := map[string]bool{}
	for _, s := range sites {
		if seen[s] {
			continue
		}
		seen[s] = true
		for _, w := range l.Wheels {
			ps = append(ps, place{filepath.Join(s, "nvidia", w, "lib"), "pip wheel nvidia/" + w + " in " + s})
		}
	}
	for _, d := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu"} {
		ps = append(ps, place{e.Root + d, "system"})
	}
	return ps
}

// Find returns the files of l to try, best first (every soname in every
// place, without duplicates), leaving out sonames of a CUDA major version
// newer than cudaMajor (0: no limit). An override variable gives exactly
// its file. The error, when nothing is found, says where it looked and
// how to point argrl at the library.
func (e *Env) Find(l Lib, cudaMajor int) ([]Found, error) {
	if p := e.Getenv(l.Env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%s=%s: %w", l.Env, p, err)
		}
		return []Found{{Path: p, Where: l.Env, Version: fileVersion(p)}}, nil
	}
	var out []Found
	seen := map[string]bool{}
	var looked []string
	for _, pl := range e.places(l) {
		if !seen["dir:"+pl.dir] {
			looked = append(looked, pl.dir)
		}
		seen["dir:"+pl.dir] = true
		for i, so := range l.Sonames {
			if cudaMajor > 0 && l.Versions[i] > cudaMajor {
				continue
			}
			p := filepath.Join(pl.dir, so)
			if seen[p] {
				continue
			}
			if st, err := os.Stat(p); err != nil || st.IsDir() {
				continue
			}
			seen[p] = true
			out = append(out, Found{Path: p, Where: pl.where, Version: fileVersion(p), CUDA: l.Versions[i]})
		}
	}
	if len(out) == 0 {
		lim := ""
		if cudaMajor > 0 {
			lim = fmt.Sprintf(" for a CUDA %d driver", cudaMajor)
		}
		return nil, fmt.Errorf("no %s library%s (%s) in LD_LIBRARY_PATH, the ldconfig cache, /usr/local/nvidia, a CUDA toolkit's lib64 or python3's nvidia pip wheels (looked in %d folders: %s); install it, or set %s to the file",
			l.Name, lim, strings.Join(l.Sonames, ", "), len(looked), strings.Join(looked, ", "), l.Env)
	}
	return out, nil
}

// fileVersion is the version the file's real name carries after ".so."
// ("libcublas.so.13" -> "libcublas.so.13.1.0.3" gives "13.1.0.3"), or "".
func fileVersion(p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		r = p
	}
	b := filepath.Base(r)
	if i := strings.Index(b, ".so."); i >= 0 {
		return b[i+4:]
	}
	return ""
}

// versionLess orders /usr/local/cuda-11.8 before /usr/local/cuda-12.4.
func versionLess(a, b string) bool {
	pa, pb := verParts(a), verParts(b)
	for i := 0; i < len(pa) && i < len(pb); i++ {
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return len(pa) < len(pb)
}

func verParts(p string) []int {
	var out []int
	for _, f := range strings.FieldsFunc(filepath.Base(p), func(r rune) bool { return r < '0' || r > '9' }) {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}
