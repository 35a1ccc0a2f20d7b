package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is the release, set at link time by
// -ldflags '-X main.version=v1.2.3'; "" takes the module version the Go
// toolchain stamped (v0.0.0-<commit time>-<commit>[+dirty] in a git
// checkout), else "devel".
var version string

// commit is the git commit, for a build that sets it at link time
// (-ldflags '-X main.commit=…') where the toolchain cannot stamp it (a git
// worktree, GOFLAGS=-buildvcs=false).
var commit string

// buildInfo is what `train --version` prints: the version, the commit,
// the Go version and the build tags, from the binary's build information.
func buildInfo() string {
	v, rev, when, dirty, tags := version, "", "", false, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			case "-tags":
				tags = s.Value
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	switch {
	case rev == "" && commit != "":
		rev = commit
	case rev == "":
		rev = "unknown (built without VCS stamping: a git worktree, GOFLAGS=-buildvcs=false or go run)"
	case dirty:
		rev += " " + when + " (with uncommitted changes)"
	default:
		rev += " " + when
	}
	if tags == "" {
		tags = "none (CPU backend only; make train-cuda and make build-mpi add argrl_cuda and argrl_mpi)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "train %s\n", v)
	fmt.Fprintf(&b, "commit:     %s\n", strings.TrimSpace(rev))
	fmt.Fprintf(&b, "go:         %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "build tags: %s\n", tags)
	return b.String()
}

func init() {
	root.Version = "set" // any non-empty value makes cobra add --version
	root.SetVersionTemplate(buildInfo())
}
