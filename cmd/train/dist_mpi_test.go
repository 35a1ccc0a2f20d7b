//go:build argrl_mpi

package main

// Data-parallel training end to end (make test-mpi): this test binary,
// built with MPI, runs as `train` under mpirun (TRAIN_TEST_MAIN=1, see
// TestMain) on the tiny configs, from the repository root.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/model/safetensors"
	"github.com/argrl/argrl/trainer"
	"github.com/argrl/argrl/trainer/ckpt"
	"github.com/argrl/argrl/trainer/metrics"
)

// repoRoot is where the configs' relative paths start.
const repoRoot = "../.."

// mpirunPath returns mpirun, skipping the test without it (failing under
// CI=1).
func mpirunPath(t *testing.T) string {
	t.Helper()
	if os.Getenv("OMPI_COMM_WORLD_SIZE") != "" {
		t.Skip("already a rank under mpirun")
	}
	p, err := exec.LookPath("mpirun")
	if err != nil {
		if os.Getenv("CI") == "1" {
			t.Fatalf("mpirun not found (CI=1): install openmpi-bin and libopenmpi-dev: %v", err)
		}
		t.Skipf("mpirun not found: %v", err)
	}
	return p
}

// mpiCmd is `mpirun [mca...] -np np <train> args...` (np 0: no mpirun, one
// plain process), run from the repository root. Further app contexts of
// an MPMD job follow after a ":" in args.
func mpiCmd(t *testing.T, np int, mca []string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var cmd *exec.Cmd
	if np == 0 {
		cmd = exec.Command(exe, args...)
	} else {
		full := append([]string{"--allow-run-as-root", "--oversubscribe", "-x", "TRAIN_TEST_MAIN=1"}, mca...)
		full = append(full, "-np", strconv.Itoa(np), exe)
		for _, a := range args {
			if a == ":" {
				full = append(full, ":", "-np", "1", exe)
				continue
			}
			full = append(full, a)
		}
		cmd = exec.Command(mpirunPath(t), full...)
	}
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "TRAIN_TEST_MAIN=1")
	return cmd
}

// mpiRun runs the job to its end (3 minutes at most: no job may hang) and
// returns its output and exit status.
func mpiRun(t *testing.T, np int, args ...string) (string, int) {
	t.Helper()
	j := startJob(t, mpiCmd(t, np, nil, args...))
	err := j.wait(t)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return j.out.String(), 0
	case errors.As(err, &ee):
		return j.out.String(), ee.ExitCode()
	}
	t.Fatal(err)
	return "", -1
}

// job is an mpirun job started in the background.
type job struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan error
}

// startJob starts cmd; a job still running when the test ends is killed.
func startJob(t *testing.T, cmd *exec.Cmd) *job {
	t.Helper()
	j := &job{cmd: cmd, out: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = j.out, j.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { j.done <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-j.done:
		default:
			killJob(cmd.Process.Pid)
		}
	})
	return j
}

// wait returns the job's end once it exits; a job running 3 minutes more
// fails the test.
func (j *job) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-j.done:
		j.done <- err
		return err
	case <-time.After(3 * time.Minute):
		killJob(j.cmd.Process.Pid)
		t.Fatalf("%v hung; output:\n%s", j.cmd.Args, j.out.String())
	}
	return nil
}

// mustRun is mpiRun that fails the test on a non-zero exit.
func mustRun(t *testing.T, np int, args ...string) string {
	t.Helper()
	out, code := mpiRun(t, np, args...)
	if code != 0 {
		t.Fatalf("%d ranks, %v: exit %d\n%s", np, args, code, out)
	}
	return out
}

// ranksOf returns the PIDs of mpirun's ranks by rank (mpirun forks them).
func ranksOf(mpirun int) map[int]int {
	out := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(mpirun) {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		for _, kv := range bytes.Split(env, []byte{0}) {
			if r, ok := bytes.CutPrefix(kv, []byte("OMPI_COMM_WORLD_RANK=")); ok {
				if n, err := strconv.Atoi(string(r)); err == nil {
					out[n] = pid
				}
			}
		}
	}
	return out
}

// killJob SIGKILLs mpirun's ranks, then mpirun: the whole job dies at
// once, as on a crash.
func killJob(mpirun int) {
	for _, pid := range ranksOf(mpirun) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	syscall.Kill(mpirun, syscall.SIGKILL)
}

// sameFiles fails unless files of checkpoint step of runs a and b are
// byte-identical.
func sameFiles(t *testing.T, what, a, b string, step int, files ...string) {
	t.Helper()
	for _, f := range files {
		x, errA := os.ReadFile(filepath.Join(a, ckpt.CheckpointsDir, ckpt.StepName(step), f))
		y, errB := os.ReadFile(filepath.Join(b, ckpt.CheckpointsDir, ckpt.StepName(step), f))
		if errA != nil || errB != nil {
			t.Fatalf("%s: %v %v", what, errA, errB)
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s: %s of %s differs (%s vs %s)", what, f, ckpt.StepName(step), a, b)
		}
	}
}

// maxRelDiff is the largest max|a−b| / max|a| over the tensors of two
// safetensors files.
func maxRelDiff(t *testing.T, a, b string) float64 {
	t.Helper()
	fa, err := safetensors.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Close()
	fb, err := safetensors.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	worst := 0.0
	for _, info := range fa.Tensors() {
		x, _, err := fa.Float32(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		y, _, err := fb.Float32(info.Name)
		if err != nil || len(y) != len(x) {
			t.Fatalf("%s: %s: %v", b, info.Name, err)
		}
		var mx, md float64
		for i := range x {
			mx = math.Max(mx, math.Abs(float64(x[i])))
			md = math.Max(md, math.Abs(float64(x[i])-float64(y[i])))
		}
		if mx > 0 {
			worst = math.Max(worst, md/mx)
		}
	}
	return worst
}

// maxMetric is the largest value of key over the run's train lines.
func maxMetric(t *testing.T, run, key string) float64 {
	t.Helper()
	recs, err := metrics.Read(filepath.Join(run, metrics.File))
	if err != nil {
		t.Fatal(err)
	}
	mx := math.Inf(-1)
	for _, r := range recs {
		if v, ok := r.Values[key]; ok && r.Kind == "train" {
			mx = math.Max(mx, v)
		}
	}
	return mx
}

// SFT on configs/sft-tiny.yaml: two 2-rank runs and a 1-rank run end with
// the same bytes (weights and optimizer state), and log the same metrics;
// rank 0 alone prints.
func TestMPISFTRanks(t *testing.T) {
	dir := t.TempDir()
	args := func(run string) []string {
		return []string{"sft", "--config", "configs/sft-tiny.yaml", "--set", "run.dir=" + run,
			"--set", "optim.max_steps=4", "--set", "eval_every=2", "--set", "checkpoint.every=2"}
	}
	a, b, one := filepath.Join(dir, "2a"), filepath.Join(dir, "2b"), filepath.Join(dir, "1")
	out := mustRun(t, 2, args(a)...)
	if n := strings.Count(out, "sft: done: 4 steps"); n != 1 || !strings.Contains(out, "data parallel: 2 ranks") {
		t.Errorf("want rank 0's messages once (done lines: %d):\n%s", n, out)
	}
	mustRun(t, 2, args(b)...)
	mustRun(t, 1, args(one)...)
	ents, err := os.ReadDir(filepath.Join(a, ckpt.CheckpointsDir, ckpt.StepName(4)))
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, e := range ents {
		all = append(all, e.Name())
	}
	sameFiles(t, "two 2-rank runs", a, b, 4, all...)
	sameFiles(t, "2 ranks vs 1", a, one, 4, safetensors.SingleName, ckpt.OptimizerFile)
	if x, y := stableMetrics(t, a), stableMetrics(t, one); x != y {
		t.Errorf("metrics differ:\n2 ranks\n%s\n1 rank\n%s", x, y)
	}
}

// GRPO (configs/grpo-tiny.yaml) and PPO (configs/ppo-tiny.yaml) from an
// SFT model, so that rewards and gradients are not flat: 2 ranks and 1
// rank end with the same adapter, value head and optimizer state. A step
// of ppo-tiny is one micro-batch of 8 prompts (grad_accum 1), which 2
// ranks split prompt by prompt: one process sums the same way with
// dist.shares: 2.
func TestMPIRLRanks(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "sft")
	mustRun(t, 0, "sft", "--config", "configs/sft-tiny.yaml", "--set", "run.dir="+base, "--set", "eval_every=0", "--set", "data.val=")
	model := filepath.Join(base, ckpt.CheckpointsDir, ckpt.StepName(12))
	for _, c := range []struct {
		algo  string
		files []string
		one   []string // the 1-rank run's extra args
	}{
		{"grpo", []string{"adapter_model.safetensors", ckpt.OptimizerFile}, nil},
		{"ppo", []string{"adapter_model.safetensors", ckpt.ValueHeadFile, ckpt.OptimizerFile}, []string{"--set", "dist.shares=2"}},
	} {
		args := func(run string) []string {
			return []string{c.algo, "--config", "configs/" + c.algo + "-tiny.yaml", "--set", "run.dir=" + run,
				"--set", "model.path=" + model, "--set", "model.init=pretrained", "--set", "optim.max_steps=4"}
		}
		two, one := filepath.Join(dir, c.algo+"2"), filepath.Join(dir, c.algo+"1")
		mustRun(t, 2, args(two)...)
		mustRun(t, 1, append(args(one), c.one...)...)
		if g := maxMetric(t, two, "grad_norm"); !(g > 0) {
			t.Fatalf("%s: grad_norm is %v at every step: the comparison would say nothing", c.algo, g)
		}
		sameFiles(t, c.algo+": 2 ranks vs 1", two, one, 4, c.files...)
		if x, y := stableMetrics(t, two), stableMetrics(t, one); x != y {
			t.Errorf("%s metrics differ:\n2 ranks\n%s\n1 rank\n%s", c.algo, x, y)
		}
	}
}

// Multi-turn GRPO (configs/grpo-multiturn-tiny.yaml): each of 2 ranks
// rolls out and scores its share's episodes and every rank receives every
// sample (without the turns' parses); the run ends with the adapter,
// optimizer state and metrics of one process summing the same 2 shares.
func TestMPIMultiTurnRanks(t *testing.T) {
	dir := t.TempDir()
	args := func(run string) []string {
		return []string{"grpo", "--config", "configs/grpo-multiturn-tiny.yaml", "--set", "run.dir=" + run, "--set", "optim.max_steps=2"}
	}
	two, one := filepath.Join(dir, "2"), filepath.Join(dir, "1")
	mustRun(t, 2, args(two)...)
	mustRun(t, 1, append(args(one), "--set", "dist.shares=2")...)
	if g := maxMetric(t, two, "grad_norm"); !(g > 0) {
		t.Fatalf("grad_norm is %v at every step: the comparison would say nothing", g)
	}
	if tm := maxMetric(t, two, "turns_mean"); !(tm > 1) {
		t.Fatalf("turns_mean %v: the episodes took one turn", tm)
	}
	sameFiles(t, "multi-turn: 2 ranks vs 1", two, one, 2, "adapter_model.safetensors", ckpt.OptimizerFile)
	if x, y := stableMetrics(t, two), stableMetrics(t, one); x != y {
		t.Errorf("multi-turn metrics differ:\n2 ranks\n%s\n1 rank\n%s", x, y)
	}
}

// stopArgs: SFT with two micro-batches per rank per step, so that 2 ranks
// and one process with one share sum differently (one process matches
// them with dist.shares: 2).
func stopArgs(run string, extra ...string) []string {
	return append([]string{"sft", "--config", "configs/sft-tiny.yaml", "--set", "run.dir=" + run,
		"--set", "optim.batch_size=2", "--set", "optim.grad_accum=4", "--set", "checkpoint.every=2",
		"--set", "checkpoint.keep_last=0"}, extra...)
}

// waitLatest polls run's `latest` until it names a step ≥ n, and returns
// it; it fails if the job ends first.
func waitLatest(t *testing.T, run string, n int, done <-chan error) int {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("the job ended (%v) before checkpoint %d", err, n)
		default:
		}
		b, _ := os.ReadFile(filepath.Join(run, ckpt.CheckpointsDir, ckpt.LatestFile))
		if s, ok := ckpt.ParseStepName(strings.TrimSpace(string(b))); ok && s >= n {
			return s
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("no checkpoint %d after 3 minutes", n)
	return 0
}

func latestStep(t *testing.T, run string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, ckpt.CheckpointsDir, ckpt.LatestFile))
	if err != nil {
		t.Fatal(err)
	}
	s, ok := ckpt.ParseStepName(strings.TrimSpace(string(b)))
	if !ok {
		t.Fatalf("latest holds %q", b)
	}
	return s
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
}

// A 2-rank run killed with SIGKILL mid-run resumes on 2 ranks to the bytes
// of an uninterrupted 2-rank run, and on 1 rank with dist.shares: 2 too;
// on one rank with one share it continues, to float32 rounding. A SIGTERM
// to one rank stops both after the same step with a checkpoint that
// resumes to the same bytes.
func TestMPIStopResume(t *testing.T) {
	dir := t.TempDir()
	straight := filepath.Join(dir, "straight")
	mustRun(t, 2, stopArgs(straight)...)
	const total = 12
	finals := []string{safetensors.SingleName, ckpt.OptimizerFile}

	t.Run("sigkill", func(t *testing.T) {
		killed := filepath.Join(dir, "killed")
		j := startJob(t, mpiCmd(t, 2, nil, stopArgs(killed)...))
		waitLatest(t, killed, 4, j.done)
		killJob(j.cmd.Process.Pid)
		j.wait(t)
		at := latestStep(t, killed)
		if at >= total {
			t.Fatalf("the run ended (checkpoint %d) before the kill", at)
		}
		one, oneDefault := filepath.Join(dir, "killed-1"), filepath.Join(dir, "killed-1d")
		copyDir(t, killed, one)
		copyDir(t, killed, oneDefault)

		o := mustRun(t, 2, stopArgs(killed, "--resume")...)
		if !strings.Contains(o, "resuming from") {
			t.Errorf("no resume line:\n%s", o)
		}
		sameFiles(t, "killed at "+strconv.Itoa(at)+" and resumed on 2 ranks", straight, killed, total, finals...)
		sameFiles(t, "trainer state", straight, killed, total, ckpt.StateFile)
		if x, y := stableMetrics(t, straight), stableMetrics(t, killed); x != y {
			t.Errorf("metrics differ:\nstraight\n%s\nkilled and resumed\n%s", x, y)
		}

		mustRun(t, 1, stopArgs(one, "--resume", "--set", "dist.shares=2")...)
		sameFiles(t, "resumed on 1 rank with dist.shares 2", straight, one, total, finals...)

		o = mustRun(t, 0, stopArgs(oneDefault, "--resume")...)
		if !strings.Contains(o, "summing 2 shares per step, this run sums 1") {
			t.Errorf("no note on the change of shares:\n%s", o)
		}
		w := filepath.Join(ckpt.CheckpointsDir, ckpt.StepName(total), safetensors.SingleName)
		d := maxRelDiff(t, filepath.Join(straight, w), filepath.Join(oneDefault, w))
		t.Logf("killed after checkpoint %d; resumed on 1 rank, 1 share: max |Δw|/max|w| per tensor %.3g", at, d)
		if d > 1e-2 {
			t.Errorf("resumed on one share, the weights differ by %.3g of their scale: more than rounding", d)
		}
	})

	t.Run("sigterm-one-rank", func(t *testing.T) {
		stopped := filepath.Join(dir, "sigterm")
		j := startJob(t, mpiCmd(t, 2, nil, stopArgs(stopped)...))
		waitLatest(t, stopped, 2, j.done)
		pid, ok := ranksOf(j.cmd.Process.Pid)[1]
		if !ok {
			t.Fatal("rank 1's process not found")
		}
		syscall.Kill(pid, syscall.SIGTERM)
		if err := j.wait(t); err == nil {
			t.Fatalf("exit 0 after SIGTERM:\n%s", j.out.String())
		}
		out := j.out.String()
		m := interruptedRE.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no 'interrupted by … checkpoint …' line:\n%s", out)
		}
		step, _ := strconv.Atoi(m[2])
		if m[1] != "SIGTERM" || step >= total || latestStep(t, stopped) != step {
			t.Fatalf("interrupted by %s after step %d, latest %d:\n%s", m[1], step, latestStep(t, stopped), out)
		}
		mustRun(t, 2, stopArgs(stopped, "--resume")...)
		sameFiles(t, fmt.Sprintf("SIGTERM to rank 1 after step %d, resumed", step), straight, stopped, total, finals...)
	})
}

// SIGTERM to mpirun (Ctrl-C, a scheduler): mpirun passes SIGTERM on to the
// ranks after odls_base_sigkill_timeout seconds, and SIGKILL as long
// after; with time enough the ranks end with a checkpoint.
func TestMPISigtermMpirun(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	j := startJob(t, mpiCmd(t, 2, []string{"--mca", "odls_base_sigkill_timeout", "3"},
		stopArgs(run, "--set", "optim.max_steps=400", "--set", "checkpoint.every=1000", "--set", "eval_every=0")...))
	waitLine(t, j, "step 1/400")
	j.cmd.Process.Signal(syscall.SIGTERM)
	j.wait(t)
	out := j.out.String()
	m := interruptedRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no 'interrupted by … checkpoint …' line:\n%s", out)
	}
	step, _ := strconv.Atoi(m[2])
	if _, err := ckpt.OpenDir(m[3], step); err != nil || step >= 400 {
		t.Fatalf("checkpoint %s after step %d: %v\n%s", m[3], step, err, out)
	}
}

// waitLine polls the job's output until it holds line; it fails if
// the job ends first.
func waitLine(t *testing.T, j *job, line string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(j.out.String(), line) {
		select {
		case err := <-j.done:
			t.Fatalf("the job ended (%v) before %q:\n%s", err, line, j.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q after 3 minutes", line)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sftNaN is `train sft` whose rank 1 sees a NaN loss at step 2 (a failure
// of one rank in the middle of a step), for TestMPIRankFailure.
func init() {
	var f runFlags
	cmd := &cobra.Command{Use: "sft-nan-rank1", Hidden: true, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadRunConfig("sft", &f)
			if err != nil {
				return err
			}
			rk, err := openRanks(cmd, cfg)
			if err != nil {
				return err
			}
			_, err = trainer.SFT(context.Background(), cfg, trainer.SFTOptions{Log: rk.log, Comm: rk.comm, Backend: rk.be,
				AfterBackward: func(_ *trainer.Setup, step int, m metrics.Metrics) {
					if rk.comm.Rank() == 1 && step == 2 {
						m["loss"] = math.NaN()
					}
				}})
			return rk.close(err)
		}}
	addRunFlags(cmd, &f)
	root.AddCommand(cmd)
}

// A failure of one rank ends every rank with a non-zero status and the
// failing rank's error, printed once; so does a rank started with another
// config.
func TestMPIRankFailure(t *testing.T) {
	dir := t.TempDir()
	out, code := mpiRun(t, 2, "sft-nan-rank1", "--config", "configs/sft-tiny.yaml", "--set", "run.dir="+filepath.Join(dir, "nan"))
	want := "train: rank 1: sft: step 2: loss is NaN"
	if code == 0 || strings.Count(out, want) != 1 {
		t.Errorf("NaN on rank 1: exit %d, want one line %q:\n%s", code, want, out)
	}
	out, code = mpiRun(t, 1, "sft", "--config", "configs/sft-tiny.yaml", "--set", "run.dir="+filepath.Join(dir, "cfg"),
		":", "sft", "--config", "configs/sft-tiny.yaml", "--set", "run.dir="+filepath.Join(dir, "cfg"), "--set", "optim.lr=0.5")
	if code == 0 || !strings.Contains(out, "rank 1's config differs from rank 0's") {
		t.Errorf("a rank with another config: exit %d:\n%s", code, out)
	}
}
