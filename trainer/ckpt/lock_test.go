package ckpt

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// One holder at a time: a second LockRun (another open file, as another
// process would have) is refused naming the holder's PID and host; after
// Unlock, or with only a stale lock file left by a dead process, LockRun
// succeeds.
func TestLockRun(t *testing.T) {
	dir := t.TempDir()
	l, err := LockRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	_, err = LockRun(dir)
	if err == nil {
		t.Fatal("a second LockRun succeeded while the first holds the lock")
	}
	for _, w := range []string{dir, fmt.Sprintf("pid %d", os.Getpid()), "host " + host, "in use"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil { // a second Unlock is harmless
		t.Fatal(err)
	}
	// A lock file left by a process that died: the kernel released its
	// flock, so only the text remains.
	if err := os.WriteFile(filepath.Join(dir, LockFile), []byte("pid 999999 on host gone since 2020-01-01T00:00:00Z\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	l2, err := LockRun(dir)
	if err != nil {
		t.Fatalf("a stale lock file blocked: %v", err)
	}
	defer l2.Unlock()
	b, _ := os.ReadFile(filepath.Join(dir, LockFile))
	if !strings.HasPrefix(string(b), fmt.Sprintf("pid %d on host %s since ", os.Getpid(), host)) || strings.Contains(string(b), "999999") {
		t.Errorf("lock file holds %q after the new holder took it", b)
	}
	if _, err := LockRun(filepath.Join(dir, "no-such-dir")); err == nil {
		t.Error("LockRun of a missing directory succeeded")
	}
}

// New removes a half-written `latest` (a kill during its atomic write)
// along with the other leftovers.
func TestNewRemovesStaleLatestTemp(t *testing.T) {
	run := t.TempDir()
	ck := filepath.Join(run, CheckpointsDir)
	if err := os.MkdirAll(ck, 0o777); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(ck, ".latest.tmp-1234")
	if err := os.WriteFile(stale, []byte("step-0"), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := New(run, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("%s survived New: %v", stale, err)
	}
}
