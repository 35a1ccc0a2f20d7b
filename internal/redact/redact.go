// Package redact takes secrets out of URLs before they reach an error or a
// log line: the password of http://user:SECRET@host/... becomes "xxxxx"
// (the user name stays, to say which account was used).
package redact

import (
	"net/url"
	"regexp"
)

// Mask replaces a password.
const Mask = "xxxxx"

// userinfo matches the "user:password@" part after a URL scheme; the
// password runs to the last "@" before the host's path, query or end.
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://[^/?#@\s:]*):[^/?#\s]*@`)

// URL returns u with its password masked. A string that does not parse as
// a URL is masked by pattern, so that even a malformed URL never shows
// its password.
func URL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return Text(u)
	}
	if _, ok := p.User.Password(); !ok {
		return u
	}
	p.User = url.UserPassword(p.User.Username(), Mask)
	return p.String()
}

// Text masks the password of every URL inside s (an error message, a log
// line).
func Text(s string) string {
	return userinfo.ReplaceAllString(s, "${1}:"+Mask+"@")
}

// Error is err with Text applied to its message; nil stays nil. It still
// unwraps to err, for errors.Is and errors.As.
func Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if r := Text(msg); r != msg {
		return &redacted{msg: r, err: err}
	}
	return err
}

type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }
