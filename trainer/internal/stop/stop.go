// Package stop stops a run on a signal. A cluster pre-empts a job with SIGTERM and
// an operator presses Ctrl-C (SIGINT); neither should cost the steps since
// the last scheduled checkpoint. From Run.Resume on, the first SIGINT or
// SIGTERM is only noted: the step in progress finishes as usual (its
// optimizer step, its metrics line, its evaluation when one is due, its
// scheduled checkpoint), then EndStep (or Next, when the signal arrived
// between steps) writes a checkpoint of it unless one was just written,
// and returns an *Interrupted error naming it; the command exits with
// 128 + the signal number (130, 143). Since the checkpoint is an ordinary
// one of a finished step, --resume continues it bit-identically. A second
// signal exits at once (status 130 or 143 too) without waiting for the
// step; the checkpoint protocol leaves the previous checkpoint intact.
package stop

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// Interrupted is the error a run stopped by a signal ends with.
type Interrupted struct {
	Signal     syscall.Signal
	Step       int    // steps done
	Checkpoint string // the checkpoint holding them ("": none yet)
}

func (e *Interrupted) Error() string {
	if e.Checkpoint == "" {
		return fmt.Sprintf("interrupted by %s before the first step; no checkpoint written", Name(e.Signal))
	}
	return fmt.Sprintf("interrupted by %s after step %d: checkpoint %s; continue with --resume", Name(e.Signal), e.Step, e.Checkpoint)
}

// ExitCode is the shell's status for death by the signal: 128 + its number.
func (e *Interrupted) ExitCode() int { return 128 + int(e.Signal) }

// Name is SIGINT or SIGTERM (another signal: its description).
func Name(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// Stopper watches for SIGINT and SIGTERM.
type Stopper struct {
	ch   chan os.Signal
	done chan struct{}
	got  atomic.Int32 // the first signal's number (0: none)
}

// Watch starts watching; log gets a line per signal, prefixed by name.
func Watch(log io.Writer, name string) *Stopper {
	s := &Stopper{ch: make(chan os.Signal, 2), done: make(chan struct{})}
	signal.Notify(s.ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for {
			select {
			case <-s.done:
				return
			case sig := <-s.ch:
				n, _ := sig.(syscall.Signal)
				if s.got.CompareAndSwap(0, int32(n)) {
					fmt.Fprintf(log, "\n%s: %s: finishing the current step, then writing a checkpoint (send it again to exit at once)\n", name, Name(n))
					continue
				}
				fmt.Fprintf(log, "\n%s: second signal (%s): exiting at once; --resume continues from the newest checkpoint\n", name, Name(n))
				os.Exit(128 + int(n))
			}
		}
	}()
	return s
}

// Signal returns the first signal received, or 0.
func (s *Stopper) Signal() syscall.Signal {
	if s == nil {
		return 0
	}
	return syscall.Signal(s.got.Load())
}

// Close stops watching; the default handling (death) is back.
func (s *Stopper) Close() {
	if s == nil || s.ch == nil {
		return
	}
	signal.Stop(s.ch)
	close(s.done)
	s.ch = nil
}
