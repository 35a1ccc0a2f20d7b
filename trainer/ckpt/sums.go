package ckpt

// Checkpoint integrity: SHA256SUMS (the sha256sum tool's format, so
// `cd step-000200 && sha256sum -c SHA256SUMS` checks a checkpoint by hand),
// atomic small files and directory fsyncs.

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

	"github.com/argrl/argrl/model/safetensors"
)

// listFiles returns the regular files under dir, relative, sorted;
// anything else (a symlink, a device) is an error.
func listFiles(dir string) ([]string, error) {
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

// writeSums fsyncs every file under dir and writes dir/SHA256SUMS.
func writeSums(dir string) error {
	files, err := listFiles(dir)
	if err != nil {
		return err
	}
	var b strings.Builder
	subdirs := map[string]bool{}
	for _, f := range files {
		if f == SumsFile {
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
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return WriteFileAtomic(filepath.Join(dir, SumsFile), []byte(b.String()))
}

// Verify checks dir against its SHA256SUMS: every listed file exists with
// its hash, and no other file is present. Errors name the file.
func Verify(dir string) error {
	sums := filepath.Join(dir, SumsFile)
	f, err := os.Open(sums)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(dir); serr != nil {
			return fmt.Errorf("checkpoint %s: %w", dir, serr)
		}
		return fmt.Errorf("checkpoint %s is partial: %s is missing", dir, SumsFile)
	}
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	listed := map[string]bool{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		h, name, ok := strings.Cut(sc.Text(), "  ")
		if _, herr := hex.DecodeString(h); !ok || len(h) != 64 || herr != nil || name == "" || strings.Contains(name, "..") {
			return fmt.Errorf("checkpoint: %s:%d: malformed line %q", sums, line, sc.Text())
		}
		got, err := hashFile(filepath.Join(dir, filepath.FromSlash(name)), false)
		if err != nil {
			return fmt.Errorf("checkpoint %s: file %s (listed in %s): %w", dir, name, SumsFile, err)
		}
		if got != h {
			return fmt.Errorf("checkpoint %s: file %s is corrupt: SHA-256 %s, %s says %s", dir, name, got, SumsFile, h)
		}
		listed[name] = true
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("checkpoint: %s: %w", sums, err)
	}
	files, err := listFiles(dir)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	for _, n := range files {
		if n != SumsFile && !listed[n] {
			return fmt.Errorf("checkpoint %s: file %s is not listed in %s", dir, n, SumsFile)
		}
	}
	if !listed[StateFile] {
		return fmt.Errorf("checkpoint %s is partial: %s is missing", dir, StateFile)
	}
	return nil
}

// WriteFileAtomic writes data to path by temp file + fsync + rename + dir
// fsync, so a reader (or a kill) sees the old file or the new one.
func WriteFileAtomic(path string, data []byte) error {
	return safetensors.WriteAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}

// linkOrCopy hard-links src to dst, or copies and fsyncs it when links
// are not possible. Checkpoint files are never modified in place, so a
// link is as good as a copy.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
