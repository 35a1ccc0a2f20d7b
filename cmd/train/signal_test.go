package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/trainer/ckpt"
	"github.com/argrl/argrl/trainer/metrics"
)

// syncBuffer collects a child's stderr while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// child is a `train` subprocess started in the background.
type child struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

func startTrain(t *testing.T, args ...string) *child {
	t.Helper()
	c := &child{cmd: trainCmd(t, args...), stderr: &syncBuffer{}, done: make(chan struct{})}
	c.cmd.Stderr = c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			c.cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// wait returns the exit code (0: success) once the child has exited.
func (c *child) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("the child did not exit:\n%s", c.stderr.String())
	}
	var ee *exec.ExitError
	switch {
	case c.err == nil:
		return 0
	case errors.As(c.err, &ee):
		return ee.ExitCode()
	}
	t.Fatal(c.err)
	return -1
}

// waitTrainLines polls run/metrics.jsonl until it holds n train lines; it
// fails if the child exits first.
func (c *child) waitTrainLines(t *testing.T, run string, n int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-c.done:
			t.Fatalf("the child exited before step %d:\n%s", n, c.stderr.String())
		default:
		}
		if b, err := os.ReadFile(filepath.Join(run, metrics.File)); err == nil && bytes.Count(b, []byte(`"kind":"train"`)) >= n {
			return
		}
		time.Sleep(200 * time.Microsecond)
	}
	t.Fatalf("no step %d after 3 minutes:\n%s", n, c.stderr.String())
}

// stableMetrics is metrics.jsonl without the timing keys (which differ
// between any two runs), one sorted JSON object per line.
func stableMetrics(t *testing.T, run string) string {
	t.Helper()
	recs, err := metrics.Read(filepath.Join(run, metrics.File))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, r := range recs {
		vals := map[string]float64{}
		for k, v := range r.Values {
			if !strings.HasSuffix(k, "per_s") && !strings.HasPrefix(k, "time_") && !strings.HasSuffix(k, "_s") {
				vals[k] = v
			}
		}
		js, err := json.Marshal(vals) // map keys marshal sorted
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%d %s %s\n", r.Step, r.Kind, js)
	}
	return b.String()
}

// sameCheckpointFiles fails unless the step's checkpoint files of runs a
// and b are byte-identical.
func sameCheckpointFiles(t *testing.T, a, b string, step int) {
	t.Helper()
	da := filepath.Join(a, ckpt.CheckpointsDir, ckpt.StepName(step))
	db := filepath.Join(b, ckpt.CheckpointsDir, ckpt.StepName(step))
	ents, err := os.ReadDir(da)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
		x, _ := os.ReadFile(filepath.Join(da, e.Name()))
		y, err := os.ReadFile(filepath.Join(db, e.Name()))
		if err != nil || !bytes.Equal(x, y) {
			t.Errorf("%s/%s differs after the interrupted run was resumed (%d vs %d bytes, %v)", ckpt.StepName(step), e.Name(), len(x), len(y), err)
		}
	}
	sort.Strings(names)
	if !strings.Contains(strings.Join(names, " "), model.AdapterWeightsName) || !strings.Contains(strings.Join(names, " "), ckpt.OptimizerFile) {
		t.Errorf("%s holds %v", da, names)
	}
}

var interruptedRE = regexp.MustCompile(`interrupted by (SIG[A-Z]+) after step (\d+): checkpoint (\S+); continue with --resume`)

// interruptResume runs args to completion in straight, and in stopped with
// sig sent after the first `after` steps, checks the exit status, the
// message and the checkpoint it names, resumes, and compares the two runs.
func interruptResume(t *testing.T, straight, stopped string, sig syscall.Signal, after, total int, args func(run string) []string) {
	t.Helper()
	if _, stderr, code := runTrain(t, args(straight)...); code != 0 {
		t.Fatalf("straight run: exit %d\n%s", code, stderr)
	}
	c := startTrain(t, args(stopped)...)
	c.waitTrainLines(t, stopped, after)
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	code := c.wait(t)
	stderr := c.stderr.String()
	if want := 128 + int(sig); code != want {
		t.Fatalf("exit %d after %v, want %d\n%s", code, sig, want, stderr)
	}
	if !strings.Contains(stderr, "finishing the current step, then writing a checkpoint") {
		t.Errorf("no message on the first signal:\n%s", stderr)
	}
	m := interruptedRE.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no 'interrupted by … checkpoint …' line:\n%s", stderr)
	}
	step, _ := strconv.Atoi(m[2])
	if m[1] != signalName(sig) || step < after || step >= total {
		t.Fatalf("interrupted by %s after step %d (want %v, a step in [%d, %d)):\n%s", m[1], step, sig, after, total, stderr)
	}
	if want := filepath.Join(stopped, ckpt.CheckpointsDir, ckpt.StepName(step)); m[3] != want {
		t.Errorf("the message names %s, want %s", m[3], want)
	}
	if _, err := ckpt.OpenDir(m[3], step); err != nil {
		t.Fatalf("the checkpoint written on %v does not verify: %v", sig, err)
	}
	if l, _ := os.ReadFile(filepath.Join(stopped, ckpt.CheckpointsDir, ckpt.LatestFile)); strings.TrimSpace(string(l)) != ckpt.StepName(step) {
		t.Errorf("latest is %q, want %s", l, ckpt.StepName(step))
	}
	_, rstderr, rcode := runTrain(t, append(args(stopped), "--resume")...)
	if rcode != 0 || !strings.Contains(rstderr, "resuming from "+m[3]) {
		t.Fatalf("--resume after %v: exit %d\n%s", sig, rcode, rstderr)
	}
	sameCheckpointFiles(t, straight, stopped, total)
	if a, b := stableMetrics(t, straight), stableMetrics(t, stopped); a != b {
		t.Errorf("metrics differ:\nstraight\n%s\nstopped at step %d and resumed\n%s", a, step, b)
	}
	t.Logf("%v after step %d of %d: exit %d, checkpoint %s; resumed run byte-identical", sig, step, total, code, m[3])
}

func signalName(s syscall.Signal) string {
	if s == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}

// SIGINT during `train sft`: the step finishes, a checkpoint is written
// (between the scheduled ones), the process exits 130, and --resume ends
// byte-identical to a run that never stopped.
func TestSFTSigintCheckpointResume(t *testing.T) {
	dir := t.TempDir()
	args := func(run string) []string {
		return []string{"sft", "--config", sftYAML(t, run, ""), "--set", "optim.max_steps=24",
			"--set", "checkpoint.every=10", "--set", "checkpoint.keep_last=0", "--set", "eval_every=8"}
	}
	interruptResume(t, filepath.Join(dir, "straight"), filepath.Join(dir, "stopped"), syscall.SIGINT, 3, 24, args)
}

// SIGTERM (a cluster's pre-emption) during `train grpo`: exit 143, then
// the same byte-identical resume.
func TestGRPOSigtermCheckpointResume(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: three GRPO runs")
	}
	dir := t.TempDir()
	args := func(run string) []string {
		return tinyRLArgs("grpo", "grpo-tiny", run, "8", "--set", "checkpoint.every=4", "--set", "eval_every=4")
	}
	interruptResume(t, filepath.Join(dir, "straight"), filepath.Join(dir, "stopped"), syscall.SIGTERM, 2, 8, args)
}

// A second signal exits at once, without waiting for the step; the run
// still resumes from its newest checkpoint.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	cfg := sftYAML(t, run, "")
	c := startTrain(t, "sft", "--config", cfg, "--set", "optim.max_steps=24", "--set", "checkpoint.every=2")
	c.waitTrainLines(t, run, 3) // step 2's checkpoint precedes step 3's line
	// Two different signals, so that neither is merged into the other
	// while pending: the second one's status proves which path exited.
	c.cmd.Process.Signal(syscall.SIGINT)
	c.cmd.Process.Signal(syscall.SIGTERM)
	code := c.wait(t)
	stderr := c.stderr.String()
	if code != 143 || !strings.Contains(stderr, "second signal (SIGTERM): exiting at once") {
		t.Fatalf("exit %d, want 143 from the second signal\n%s", code, stderr)
	}
	if _, stderr, code := runTrain(t, "sft", "--config", cfg, "--set", "optim.max_steps=24", "--set", "checkpoint.every=2", "--resume"); code != 0 {
		t.Fatalf("--resume after the second signal: exit %d\n%s", code, stderr)
	}
}
