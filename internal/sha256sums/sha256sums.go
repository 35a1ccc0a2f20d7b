// Package sha256sums writes and checks a directory's SHA256SUMS file, in
// the sha256sum tool's format ("<64 hex>  <relative path>" per line), so
// `cd DIR && sha256sum -c SHA256SUMS` checks it by hand. Checkpoints
// (trainer/ckpt) are written with one, and every loader of a model or
// adapter directory (model.Open, model.ImportPEFT, model.Export) verifies
// a directory that has one before it reads a byte of it.
package sha256sums

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/argrl/argrl/internal/atomicfile"
)

// File is the checksum file's name inside the directory it covers.
const File = "SHA256SUMS"

// ListFiles returns the regular files under dir, relative (slash
// separated), sorted; anything else (a symlink, a device) is an error.
func ListFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	sort.Strings(out)
	return out, err
}

// hashFile returns the SHA-256 of path, fsyncing it first when sync is set.
func hashFile(path string, sync bool) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if sync {
		if err := f.Sync(); err != nil {
			return "", fmt.Errorf("fsync %s: %w", path, err)
		}
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Write fsyncs every file under dir (and the directories holding them)
// and writes dir/SHA256SUMS atomically, listing every file but itself.
func Write(dir string) error {
	files, err := ListFiles(dir)
	if err != nil {
		return err
	}
	var b strings.Builder
	subdirs := map[string]bool{}
	for _, f := range files {
		if f == File {
			continue
		}
		h, err := hashFile(filepath.Join(dir, f), true)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", h, f)
		subdirs[filepath.Dir(filepath.Join(dir, f))] = true
	}
	for d := range subdirs {
		if err := atomicfile.SyncDir(d); err != nil {
			return err
		}
	}
	return atomicfile.WriteFile(filepath.Join(dir, File), []byte(b.String()))
}

// ErrMissing is the error Verify wraps when dir has no SHA256SUMS.
var ErrMissing = errors.New(File + " is missing")

// Verify checks dir against its SHA256SUMS: every listed file exists with
// its hash, and no other file is present. It returns the listed names;
// errors name the directory and the file.
func Verify(dir string) ([]string, error) {
	sums := filepath.Join(dir, File)
	f, err := os.Open(sums)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(dir); serr != nil {
			return nil, serr
		}
		return nil, fmt.Errorf("%s: %w", dir, ErrMissing)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	listed := map[string]bool{}
	var names []string
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		h, name, ok := strings.Cut(sc.Text(), "  ")
		if _, herr := hex.DecodeString(h); !ok || len(h) != 64 || herr != nil || name == "" || strings.Contains(name, "..") {
			return nil, fmt.Errorf("%s:%d: malformed line %q", sums, line, sc.Text())
		}
		got, err := hashFile(filepath.Join(dir, filepath.FromSlash(name)), false)
		if err != nil {
			return nil, fmt.Errorf("%s: file %s (listed in %s): %w", dir, name, File, err)
		}
		if got != h {
			return nil, fmt.Errorf("%s: file %s is corrupt: SHA-256 %s, %s says %s", dir, name, got, File, h)
		}
		listed[name] = true
		names = append(names, name)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", sums, err)
	}
	files, err := ListFiles(dir)
	if err != nil {
		return nil, err
	}
	for _, n := range files {
		if n != File && !listed[n] {
			return nil, fmt.Errorf("%s: file %s is not listed in %s", dir, n, File)
		}
	}
	return names, nil
}

// VerifyIfPresent is Verify for a directory that may have no SHA256SUMS
// (a Hugging Face model, an adapter from elsewhere): without one it checks
// nothing and returns nil.
func VerifyIfPresent(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, File)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	_, err := Verify(dir)
	return err
}
