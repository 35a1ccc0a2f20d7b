// Package atomicfile writes files so that a reader, or a kill at any
// instant, sees the old file or the new one and never a mix, and creates
// them with the permissions the user's umask asks for: files 0666 &^ umask,
// directories 0777 &^ umask (os.CreateTemp and os.MkdirTemp would make them
// private, 0600 and 0700, whatever the umask).
//
// A file being written is a sibling temp file named .NAME.tmp-RANDOM;
// RemoveStale deletes those a kill left behind.
package atomicfile

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// FileMode and DirMode are the modes files and directories are created
// with; the kernel takes the umask off.
const (
	FileMode fs.FileMode = 0o666
	DirMode  fs.FileMode = 0o777
)

// tempName is dir/prefix + random + suffix, where pattern is prefix*suffix
// (no "*": the random part goes last), as os.CreateTemp names files.
func tempName(dir, pattern string) (string, error) {
	if strings.ContainsRune(pattern, os.PathSeparator) {
		return "", fmt.Errorf("pattern %q contains a path separator", pattern)
	}
	prefix, suffix := pattern, ""
	if i := strings.LastIndexByte(pattern, '*'); i >= 0 {
		prefix, suffix = pattern[:i], pattern[i+1:]
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return filepath.Join(dir, prefix+hex.EncodeToString(b[:])+suffix), nil
}

// CreateTemp is os.CreateTemp with mode FileMode &^ umask.
func CreateTemp(dir, pattern string) (*os.File, error) {
	for try := 0; ; try++ {
		name, err := tempName(dir, pattern)
		if err != nil {
			return nil, fmt.Errorf("create temp file in %s: %w", dir, err)
		}
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, FileMode)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		return f, err
	}
}

// MkdirTemp is os.MkdirTemp with mode DirMode &^ umask.
func MkdirTemp(dir, pattern string) (string, error) {
	for try := 0; ; try++ {
		name, err := tempName(dir, pattern)
		if err != nil {
			return "", fmt.Errorf("create temp directory in %s: %w", dir, err)
		}
		err = os.Mkdir(name, DirMode)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		if err != nil {
			return "", err
		}
		return name, nil
	}
}

// TempPrefix is the name prefix of the temp files Write uses for path's
// base name: ".config.yaml.tmp-" for config.yaml.
func TempPrefix(name string) string { return "." + name + ".tmp-" }

// Write writes path through fill: a temp file in the same directory is
// written, fsynced and renamed over path, then the directory is fsynced.
// A failure leaves any previous file at path untouched and no temp file.
func Write(path string, fill func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	tmp, err := CreateTemp(dir, TempPrefix(filepath.Base(path))+"*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if err = fill(bw); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err = bw.Flush(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("%s: fsync: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// WriteFile writes data to path as Write does.
func WriteFile(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// SyncDir fsyncs the directory dir (where the file system supports it), so
// that the renames and creations inside it are durable.
func SyncDir(dir string) error {
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

// RemoveStale deletes the temp files a kill during Write left in dir for
// the given base names, and returns the paths it removed. Call it only
// while no other process can be writing those files (e.g. under a lock).
func RemoveStale(dir string, names ...string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range ents {
		for _, n := range names {
			if e.Type().IsRegular() && strings.HasPrefix(e.Name(), TempPrefix(n)) {
				p := filepath.Join(dir, e.Name())
				if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return removed, err
				}
				removed = append(removed, p)
				break
			}
		}
	}
	return removed, nil
}
