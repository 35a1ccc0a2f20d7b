package ckpt

// Checkpoint integrity: SHA256SUMS (internal/sha256sums, the one
// implementation model loading uses too), atomic small files and
// directory fsyncs (internal/atomicfile: modes 0666 and 0777 less the
// umask).

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/argrl/argrl/internal/atomicfile"
	"github.com/argrl/argrl/internal/sha256sums"
)

// Verify checks the checkpoint directory dir against its SHA256SUMS:
// every listed file exists with its hash, no other file is present, and
// trainer_state.json is among them. A missing SHA256SUMS marks a partial
// checkpoint. Errors name the file.
func Verify(dir string) error {
	names, err := sha256sums.Verify(dir)
	if errors.Is(err, sha256sums.ErrMissing) {
		return fmt.Errorf("checkpoint %s is partial: %s is missing", dir, SumsFile)
	}
	if err != nil {
		return fmt.Errorf("checkpoint %w", err)
	}
	for _, n := range names {
		if n == StateFile {
			return nil
		}
	}
	return fmt.Errorf("checkpoint %s is partial: %s is missing", dir, StateFile)
}

// WriteFileAtomic writes data to path by temp file + fsync + rename + dir
// fsync, so a reader (or a kill) sees the old file or the new one.
func WriteFileAtomic(path string, data []byte) error {
	return atomicfile.WriteFile(path, data)
}

func syncDir(dir string) error { return atomicfile.SyncDir(dir) }

// linkOrCopy hard-links src to dst, or copies and fsyncs it when links
// are not possible. Checkpoint files are never modified in place, so a
// link is as good as a copy.
func linkOrCopy(src, dst string) (err error) {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := in.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("copy: %w", cerr)
		}
	}()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, atomicfile.FileMode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		return errors.Join(err, out.Close())
	}
	if err := out.Sync(); err != nil {
		return errors.Join(err, out.Close())
	}
	return out.Close()
}
