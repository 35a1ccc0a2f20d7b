package metrics

// Console progress on stderr (docs/contracts.md §8: step, loss, reward, tokens/s,
// ETA). On a terminal one line is redrawn in place at most every 0.5 s;
// otherwise (a log file, CI) a plain line is printed at most every 10 s.
// The first and the last step are always shown. Tokens/s is measured over
// the steps since the previous line; the ETA extrapolates the mean step time
// since this process started (so a resumed run estimates from its own pace).
//
// A counter (NewCounter) is the same line over the items of a long command
// (evaluation, generation, scoring, conversion): "LABEL n/total", and its
// first line waits one interval, so a job shorter than that prints only its
// last line, which gives the time taken.

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"
)

// Progress prints the progress line.
type Progress struct {
	w     io.Writer
	tty   bool
	every time.Duration
	now   func() time.Time

	label        string // "step", or a counter's label
	counter      bool
	total, start int // steps in the run; step the process started at
	t0, last     time.Time
	printed      bool
	tokens       int64     // tokens since the last line
	tokT         time.Time // when that count started
}

// NewProgress writes to w (a terminal gets an in-place line) for a run of
// total steps that starts (or resumes) after step start.
func NewProgress(w io.Writer, total, start int) *Progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	p := &Progress{w: w, tty: tty, label: "step", total: total, start: start, now: time.Now, every: 10 * time.Second}
	if tty {
		p.every = 500 * time.Millisecond
	}
	p.t0 = p.now()
	p.tokT, p.last = p.t0, p.t0
	return p
}

// NewCounter writes to w the progress of a command over total items,
// labelled label (e.g. "eval"); Step(n, nil, tokens) reports n items done.
func NewCounter(w io.Writer, label string, total int) *Progress {
	p := NewProgress(w, total, 0)
	p.label, p.counter = label, true
	return p
}

// Step reports that step (1-based count of steps done) finished after
// processing tokens tokens, with its metrics (loss, reward_mean, lr are
// shown when present).
func (p *Progress) Step(step int, m Metrics, tokens int) {
	p.tokens += int64(tokens)
	t := p.now()
	if (p.printed || p.counter) && step < p.total && t.Sub(p.last) < p.every {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d/%d", p.label, step, p.total)
	for _, f := range []struct{ key, label, fmt string }{
		{"loss", "loss", "%.4f"}, {"reward_mean", "reward", "%.3f"}, {"lr", "lr", "%.3g"},
	} {
		if v, ok := m[f.key]; ok {
			fmt.Fprintf(&b, "  %s "+f.fmt, f.label, v)
		}
	}
	if dt := t.Sub(p.tokT).Seconds(); dt > 0 && p.tokens > 0 {
		fmt.Fprintf(&b, "  tok/s %.0f", float64(p.tokens)/dt)
	}
	if done := step - p.start; done > 0 && step < p.total {
		eta := time.Duration(float64(t.Sub(p.t0)) / float64(done) * float64(p.total-step))
		fmt.Fprintf(&b, "  eta %s", fmtDuration(eta))
	}
	if p.counter && step >= p.total {
		fmt.Fprintf(&b, "  in %s", fmtDuration(t.Sub(p.t0)))
	}
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", b.String())
		if step >= p.total {
			fmt.Fprintln(p.w)
		}
	} else {
		fmt.Fprintln(p.w, b.String())
	}
	p.printed, p.last = true, t
	p.tokens, p.tokT = 0, t
}

// Printf prints a message on its own line without garbling the progress line.
func (p *Progress) Printf(format string, args ...any) {
	if p.tty && p.printed {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, format, args...)
	if !strings.HasSuffix(format, "\n") {
		fmt.Fprintln(p.w)
	}
}

// fmtDuration prints 1h02m, 3m20s or 45s.
func fmtDuration(d time.Duration) string {
	s := int64(math.Round(d.Seconds()))
	switch {
	case s >= 3600:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	case s >= 60:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%ds", s)
}
