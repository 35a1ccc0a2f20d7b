package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// withUmask runs f with the process umask set to mask, then restores it.
func withUmask(t *testing.T, mask int, f func()) {
	t.Helper()
	old := syscall.Umask(mask)
	defer syscall.Umask(old)
	f()
}

// Files get 0666 and directories 0777, less the umask, whatever it is.
func TestModesFollowUmask(t *testing.T) {
	for _, mask := range []int{0o077, 0o022, 0o002} {
		dir := t.TempDir()
		withUmask(t, mask, func() {
			p := filepath.Join(dir, "f.json")
			if err := WriteFile(p, []byte("{}\n")); err != nil {
				t.Fatal(err)
			}
			tmp, err := CreateTemp(dir, ".x-*.tmp")
			if err != nil {
				t.Fatal(err)
			}
			tmp.Close()
			d, err := MkdirTemp(dir, ".d-*")
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				path string
				want fs.FileMode
			}{{p, FileMode &^ fs.FileMode(mask)}, {tmp.Name(), FileMode &^ fs.FileMode(mask)}, {d, DirMode &^ fs.FileMode(mask)}} {
				st, err := os.Stat(c.path)
				if err != nil {
					t.Fatal(err)
				}
				if got := st.Mode().Perm(); got != c.want {
					t.Errorf("umask %03o: %s has mode %03o, want %03o", mask, filepath.Base(c.path), got, c.want)
				}
			}
			if !strings.HasPrefix(filepath.Base(tmp.Name()), ".x-") || !strings.HasSuffix(tmp.Name(), ".tmp") {
				t.Errorf("CreateTemp name %q does not follow the pattern", tmp.Name())
			}
		})
	}
}

// A failing write leaves the old file and no temp file; RemoveStale
// removes what a kill left, and only for the names asked.
func TestWriteFailureAndRemoveStale(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "latest")
	if err := WriteFile(p, []byte("step-000001\n")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(p, func(w io.Writer) error {
		w.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Write error %v, want boom", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "step-000001\n" {
		t.Errorf("a failed write changed the file: %q", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("a failed write left %d entries", len(ents))
	}
	// What a kill during the write leaves behind.
	for _, n := range []string{TempPrefix("latest") + "abc", TempPrefix("config.yaml") + "def", ".other.tmp-1"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := RemoveStale(dir, "latest", "config.yaml")
	if err != nil || len(removed) != 2 {
		t.Fatalf("RemoveStale removed %v, %v", removed, err)
	}
	for _, n := range []string{"latest", ".other.tmp-1"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("RemoveStale removed %s: %v", n, err)
		}
	}
}
