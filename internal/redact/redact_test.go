package redact

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestURLAndText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://user:SECRET@host:8000/v1", "http://user:xxxxx@host:8000/v1"},
		{"https://:SECRET@host/v1/chat?x=1", "https://:xxxxx@host/v1/chat?x=1"},
		{"http://user@host/v1", "http://user@host/v1"},
		{"http://host:8000/v1", "http://host:8000/v1"},
		{"http://user:p@SECRET@host/", "http://user:xxxxx@host/"},
	} {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	msg := `judge: Post "http://u:SECRET@10.0.0.1:9/v1/chat/completions": dial tcp: refused; retried http://a:SECRET@b/x and ftp://c:SECRET@d`
	got := Text(msg)
	if strings.Contains(got, "SECRET") {
		t.Errorf("Text left a secret: %s", got)
	}
	if !strings.Contains(got, "http://u:xxxxx@10.0.0.1:9/v1/chat/completions") || !strings.Contains(got, "dial tcp: refused") {
		t.Errorf("Text changed more than the passwords: %s", got)
	}
	// A malformed URL (bad escape) still loses its password.
	if got := URL("http://u:SECRET@host/%zz"); strings.Contains(got, "SECRET") {
		t.Errorf("malformed URL kept its password: %s", got)
	}
}

func TestError(t *testing.T) {
	if Error(nil) != nil {
		t.Fatal("Error(nil) != nil")
	}
	plain := errors.New("no url here")
	if Error(plain) != plain {
		t.Error("an error without a secret should be returned as is")
	}
	err := Error(fmt.Errorf("http://u:SECRET@h/v1: %w", context.DeadlineExceeded))
	if strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), "u:xxxxx@h") {
		t.Errorf("Error: %v", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Error("the redacted error no longer unwraps to its cause")
	}
}
