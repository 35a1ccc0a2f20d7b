package ckpt

// The run directory's lock: one training process at a time owns RUN.
// It is an exclusive flock(2) on RUN/.lock, taken without waiting, so the
// kernel releases it when the holder exits however it exits (a stale
// .lock file from a dead process blocks nothing). The file's text (PID,
// host, start time) only serves the message that refuses a second process;
// the file is never removed, since deleting a lock file while another
// process opens it would let two holders lock two different files.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/argrl/argrl/internal/atomicfile"
)

// LockFile is the lock's name inside RUN/.
const LockFile = ".lock"

// Lock is a held run-directory lock.
type Lock struct {
	f *os.File
}

// LockRun takes the exclusive lock on the run directory dir (which must
// exist). When another live process holds it, the error names that
// process's PID and host.
func LockRun(dir string) (*Lock, error) {
	p := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, atomicfile.FileMode)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		cerr := f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, errors.Join(fmt.Errorf("run directory %s is in use by another train process (%s); wait for it to end, stop it, or choose another run.dir", dir, holder(p)), cerr)
		}
		return nil, errors.Join(fmt.Errorf("lock %s: %w", p, err), cerr)
	}
	host, herr := os.Hostname()
	if herr != nil {
		host = fmt.Sprintf("unknown (%v)", herr)
	}
	info := fmt.Sprintf("pid %d on host %s since %s\n", os.Getpid(), host, time.Now().Format(time.RFC3339))
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(info), 0)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("lock %s: %w", p, err), f.Close())
	}
	return &Lock{f: f}, nil
}

// holder describes the process named in the lock file at p.
func holder(p string) string {
	b, err := os.ReadFile(p)
	s := strings.TrimSpace(string(b))
	if err != nil || s == "" {
		return "it has not written its PID and host yet"
	}
	return s
}

// Unlock releases the lock (closing the file releases the flock).
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// MkdirNew makes dir and its missing parents and returns the directories
// it created, parents first (those made before an error too), so that a
// failed start can remove them again.
func MkdirNew(dir string) ([]string, error) {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	slices.Reverse(missing)
	err := os.MkdirAll(dir, atomicfile.DirMode)
	var made []string
	for _, d := range missing {
		if _, serr := os.Stat(d); serr == nil {
			made = append(made, d)
		}
	}
	return made, err
}
