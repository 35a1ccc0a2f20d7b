package metrics

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeLog(t *testing.T, path string, resume int, lines func(l *Writer)) {
	t.Helper()
	l, err := Open(path, resume)
	if err != nil {
		t.Fatal(err)
	}
	lines(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestMetricsLineFormat(t *testing.T) {
	p := filepath.Join(t.TempDir(), File)
	writeLog(t, p, -1, func(l *Writer) {
		l.Log("train", 3, Metrics{"loss": 1.25, "lr": 1e-4, "grad_norm": math.NaN()})
		l.Log("eval", 3, Metrics{"fcm": 0.5, "tid": 1})
		if err := l.Log("train", 4, Metrics{"step": 1}); err == nil {
			t.Error("reserved key accepted")
		}
	})
	got, _ := os.ReadFile(p)
	want := `{"step":3,"kind":"train","grad_norm":null,"loss":1.25,"lr":0.0001}` + "\n" +
		`{"step":3,"kind":"eval","fcm":0.5,"tid":1}` + "\n"
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	recs, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Values["loss"] != 1.25 || recs[1].Kind != "eval" || recs[1].Line != 2 {
		t.Fatalf("parsed %+v", recs)
	}
	if _, ok := recs[0].Values["grad_norm"]; ok {
		t.Fatal("null parsed as a value")
	}
}

// A resumed run's log equals the uninterrupted run's: lines after the
// checkpoint's step, and a torn final line, are cut before appending.
func TestMetricsResumeTruncates(t *testing.T) {
	dir := t.TempDir()
	steps := func(l *Writer, from, to int) {
		for s := from; s <= to; s++ {
			l.Log("train", s, Metrics{"loss": 1 / float64(s)})
			if s%3 == 0 {
				l.Log("eval", s, Metrics{"fcm": float64(s) / 10})
			}
		}
	}
	straight := filepath.Join(dir, "a.jsonl")
	writeLog(t, straight, -1, func(l *Writer) { steps(l, 1, 10) })

	resumed := filepath.Join(dir, "b.jsonl")
	writeLog(t, resumed, -1, func(l *Writer) { steps(l, 1, 8) }) // killed after step 8, checkpoint at 6
	f, _ := os.OpenFile(resumed, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"step":9,"kind":"tr`) // torn write
	f.Close()
	writeLog(t, resumed, 6, func(l *Writer) { steps(l, 7, 10) })
	a, _ := os.ReadFile(straight)
	b, _ := os.ReadFile(resumed)
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("resumed log differs:\n%s\nvs\n%s", a, b)
	}
	// Resuming at step 0 (no step done) empties it; a missing file is fine.
	writeLog(t, resumed, 0, func(*Writer) {})
	if b, _ := os.ReadFile(resumed); len(b) != 0 {
		t.Fatalf("resume at 0 left %q", b)
	}
	writeLog(t, filepath.Join(dir, "new.jsonl"), 5, func(*Writer) {})

	// A garbled line in the middle is an error naming file:line, not a cut.
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"step\":1,\"kind\":\"train\"}\nnot json\n{\"step\":2,\"kind\":\"train\"}\n"), 0o644)
	if _, err := Open(bad, 1); err == nil || !strings.Contains(err.Error(), "bad.jsonl:2") {
		t.Fatalf("garbled middle line: %v", err)
	}
}

func TestReadMetricsErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(filepath.Join(dir, "none.jsonl")); err == nil || !strings.Contains(err.Error(), "none.jsonl") {
		t.Fatalf("missing file: %v", err)
	}
	for name, body := range map[string]string{
		"nostep": `{"kind":"train","loss":1}`,
		"string": `{"step":1,"kind":"train","loss":"high"}`,
		"array":  `[1,2]`,
		"trail":  `{"step":1,"kind":"train"} {}`,
		"nokind": `{"step":1,"loss":1}`,
	} {
		p := filepath.Join(dir, name+".jsonl")
		os.WriteFile(p, []byte("{\"step\":0,\"kind\":\"train\",\"loss\":2}\n\n"+body+"\n"), 0o644)
		if _, err := Read(p); err == nil || !strings.Contains(err.Error(), name+".jsonl:3") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestCheckFinite(t *testing.T) {
	if err := CheckFinite(5, Metrics{"loss": 1, "grad_norm": 2}, "step-000004"); err != nil {
		t.Fatal(err)
	}
	err := CheckFinite(7, Metrics{"loss": math.NaN(), "grad_norm": math.Inf(1)}, "step-000005")
	var nf *NonFiniteError
	if !errors.As(err, &nf) || nf.Key != "grad_norm" || nf.Step != 7 {
		t.Fatalf("got %v", err)
	}
	for _, w := range []string{"step 7", "grad_norm is +Inf", "step-000005", "--resume"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
	if err := CheckFinite(1, Metrics{"loss": math.NaN(), "kl": 0}, "", "kl"); err != nil {
		t.Fatalf("key filter ignored: %v", err)
	}
	if err := CheckFinite(1, Metrics{"loss": math.NaN()}, ""); err == nil || !strings.Contains(err.Error(), "no checkpoint") {
		t.Fatalf("got %v", err)
	}
}

func TestProgressPlainLinesRateLimited(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, 100, 0)
	now := time.Unix(1000, 0)
	p.now = func() time.Time { return now }
	p.t0, p.tokT = now, now
	for s := 1; s <= 100; s++ {
		now = now.Add(time.Second) // 1 s per step, 1000 tokens per step
		p.Step(s, Metrics{"loss": 2.5, "reward_mean": 0.25}, 1000)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	// Step 1, then every 10 s, then the last step: 1, 11, 21, …, 91, 100.
	if len(lines) != 11 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	if lines[0] != "step 1/100  loss 2.5000  reward 0.250  tok/s 1000  eta 1m39s" {
		t.Fatalf("first line %q", lines[0])
	}
	if !strings.HasPrefix(lines[10], "step 100/100") || strings.Contains(lines[10], "eta") || strings.Contains(buf.String(), "\r") {
		t.Fatalf("last line %q", lines[10])
	}
	if fmtDuration(3725*time.Second) != "1h02m" || fmtDuration(45*time.Second) != "45s" {
		t.Fatal("fmtDuration")
	}
}

func TestCounterWaitsOneIntervalThenRateLimits(t *testing.T) {
	var buf bytes.Buffer
	p := NewCounter(&buf, "eval", 40)
	now := time.Unix(1000, 0)
	p.now = func() time.Time { return now }
	p.t0, p.tokT, p.last = now, now, now
	for n := 1; n <= 40; n++ {
		now = now.Add(time.Second) // 1 s and 50 tokens per item
		p.Step(n, nil, 50)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	// Nothing before 10 s, then every 10 s, then the last item: 10, 20, 30, 40.
	want := []string{
		"eval 10/40  tok/s 50  eta 30s",
		"eval 20/40  tok/s 50  eta 20s",
		"eval 30/40  tok/s 50  eta 10s",
		"eval 40/40  tok/s 50  in 40s",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n%s\nwant:\n%s", buf.String(), strings.Join(want, "\n"))
	}

	// A job shorter than the interval prints only its last line.
	buf.Reset()
	p = NewCounter(&buf, "score", 3)
	now = time.Unix(2000, 0)
	p.now = func() time.Time { return now }
	p.t0, p.tokT, p.last = now, now, now
	for n := 1; n <= 3; n++ {
		now = now.Add(time.Second)
		p.Step(n, nil, 0)
	}
	if got := buf.String(); got != "score 3/3  in 3s\n" {
		t.Fatalf("short job printed %q", got)
	}
}
