package sha256sums

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"a.json": "{}\n", "sub/b.bin": "0123456789"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Write lists every file but itself in sha256sum's format; Verify accepts
// it and refuses each kind of damage with an error naming the file.
func TestWriteVerify(t *testing.T) {
	dir := writeDir(t)
	b, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "  a.json") || !strings.HasSuffix(lines[1], "  sub/b.bin") || len(strings.Fields(lines[0])[0]) != 64 {
		t.Fatalf("SHA256SUMS:\n%s", b)
	}
	names, err := Verify(dir)
	if err != nil || strings.Join(names, ",") != "a.json,sub/b.bin" {
		t.Fatalf("Verify: %v %v", names, err)
	}
	if err := VerifyIfPresent(dir); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		damage func(dir string)
		want   []string
	}{
		{"altered", func(d string) { os.WriteFile(filepath.Join(d, "sub", "b.bin"), []byte("0123456788"), 0o666) }, []string{"sub/b.bin", "corrupt"}},
		{"missing", func(d string) { os.Remove(filepath.Join(d, "a.json")) }, []string{"a.json", "listed in"}},
		{"unlisted", func(d string) { os.WriteFile(filepath.Join(d, "extra"), nil, 0o666) }, []string{"extra", "not listed"}},
		{"garbled", func(d string) { os.WriteFile(filepath.Join(d, File), []byte("nonsense\n"), 0o666) }, []string{File + ":1", "malformed"}},
		{"escaping path", func(d string) {
			os.WriteFile(filepath.Join(d, File), []byte(strings.Repeat("0", 64)+"  ../x\n"), 0o666)
		}, []string{"malformed"}},
	} {
		d := writeDir(t)
		c.damage(d)
		_, err := Verify(d)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if verr := VerifyIfPresent(d); verr == nil || verr.Error() != err.Error() {
			t.Errorf("%s: VerifyIfPresent %v, Verify %v", c.name, verr, err)
		}
		for _, w := range append(c.want, d) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.name, err, w)
			}
		}
	}
	// No SHA256SUMS: Verify says so, VerifyIfPresent checks nothing.
	plain := t.TempDir()
	os.WriteFile(filepath.Join(plain, "config.json"), []byte("{}"), 0o666)
	if _, err := Verify(plain); !errors.Is(err, ErrMissing) {
		t.Errorf("Verify without SHA256SUMS: %v", err)
	}
	if err := VerifyIfPresent(plain); err != nil {
		t.Errorf("VerifyIfPresent without SHA256SUMS: %v", err)
	}
}
