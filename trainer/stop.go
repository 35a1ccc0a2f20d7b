package trainer

// Stopping a run on a signal. A cluster pre-empts a job with SIGTERM and
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
		return fmt.Sprintf("interrupted by %s before the first step; no checkpoint written", signalName(e.Signal))
	}
	return fmt.Sprintf("interrupted by %s after step %d: checkpoint %s; continue with --resume", signalName(e.Signal), e.Step, e.Checkpoint)
}

// ExitCode is the shell's status for death by the signal: 128 + its number.
func (e *Interrupted) ExitCode() int { return 128 + int(e.Signal) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// stopper watches for SIGINT and SIGTERM.
type stopper struct {
	ch   chan os.Signal
	done chan struct{}
	got  atomic.Int32 // the first signal's number (0: none)
}

// watchSignals starts watching; log gets a line per signal.
func watchSignals(log io.Writer, name string) *stopper {
	s := &stopper{ch: make(chan os.Signal, 2), done: make(chan struct{})}
	signal.Notify(s.ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for {
			select {
			case <-s.done:
				return
			case sig := <-s.ch:
				n, _ := sig.(syscall.Signal)
				if s.got.CompareAndSwap(0, int32(n)) {
					fmt.Fprintf(log, "\n%s: %s: finishing the current step, then writing a checkpoint (send it again to exit at once)\n", name, signalName(n))
					continue
				}
				fmt.Fprintf(log, "\n%s: second signal (%s): exiting at once; --resume continues from the newest checkpoint\n", name, signalName(n))
				os.Exit(128 + int(n))
			}
		}
	}()
	return s
}

// signal returns the first signal received, or 0.
func (s *stopper) signal() syscall.Signal {
	if s == nil {
		return 0
	}
	return syscall.Signal(s.got.Load())
}

// close stops watching; the default handling (death) is back.
func (s *stopper) close() {
	if s == nil || s.ch == nil {
		return
	}
	signal.Stop(s.ch)
	close(s.done)
	s.ch = nil
}

// interrupted returns nil when no signal arrived (at any rank: the ranks
// agree, so that all stop after the same step). Otherwise it makes sure a
// checkpoint holds the state after step (the steps done so far) and
// returns the *Interrupted error that ends the run.
func (r *Run) interrupted(step int) error {
	sig, err := r.team.signal(r.stop.signal())
	if err != nil {
		return err
	}
	if sig == 0 {
		return nil
	}
	e := &Interrupted{Signal: sig, Step: step}
	switch {
	case step > r.Done && r.savedStep != step:
		if err := r.checkpoint(step, false); err != nil {
			return fmt.Errorf("%s: saving the checkpoint after step %d: %w", signalName(sig), step, err)
		}
		e.Checkpoint = r.Saved
	case step > r.Done:
		e.Checkpoint = r.Saved
	case r.Resumed != nil:
		e.Checkpoint = r.Resumed.Dir
	}
	return e
}
