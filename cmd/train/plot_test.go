package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/argrl/argrl/trainer/metrics"
)

// tinyGRPORun runs configs/grpo-tiny.yaml for 6 steps (validation at 2, 4
// and 6) in a temporary directory, from the demo's base model, which
// writes tool calls (given 64 new tokens), so that the rollouts carry
// argument values.
func tinyGRPORun(t *testing.T) string {
	t.Helper()
	run := filepath.Join(t.TempDir(), "grpo-tiny")
	td := "../../trainer/testdata/sft"
	_, stderr, code := runTrain(t, "grpo", "--config", "../../configs/grpo-tiny.yaml",
		"--set", "run.dir="+run, "--set", "model.path=../../configs/demo/base-model", "--set", "model.init=pretrained",
		"--set", "data.train="+td+"/train.jsonl", "--set", "data.val="+td+"/val.jsonl",
		"--set", "optim.max_steps=6", "--set", "eval_every=2", "--set", "rollout.max_new_tokens=64")
	if code != 0 || !strings.Contains(stderr, "grpo: done: 6 steps") {
		t.Fatalf("train grpo: exit %d\n%s", code, stderr)
	}
	return run
}

// `train plot RUN` writes the meaningful PNGs and RUN/report.html; the run
// recorded its rollouts at each evaluation with β weights on the argument
// values, and per-language validation rates.
func TestPlotReport(t *testing.T) {
	run := tinyGRPORun(t)
	_, stderr, code := runTrain(t, "plot", run)
	if code != 0 {
		t.Fatalf("train plot: exit %d\n%s", code, stderr)
	}
	var pngs []string
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if strings.HasSuffix(line, ".png") {
			pngs = append(pngs, filepath.Base(line))
		}
	}
	sort.Strings(pngs)
	for _, trivial := range []string{"train_updates.png", "train_time_reward_s.png", "train_epoch.png", "lr.png"} {
		if strings.Contains(stderr, trivial) {
			t.Errorf("train plot drew %s (trivial: a counter, a timing or a constant)", trivial)
		}
	}
	if len(pngs) < 4 || len(pngs) > 14 || !strings.Contains(stderr, "wrote "+filepath.Join(run, metrics.ReportFile)) {
		t.Fatalf("wrote %v\n%s", pngs, stderr)
	}

	steps, err := metrics.RolloutSteps(run)
	if err != nil || fmt.Sprint(steps) != "[2 4 6]" {
		t.Fatalf("rollouts at steps %v (%v), want the evaluated steps [2 4 6]", steps, err)
	}
	groups, err := metrics.ReadRollouts(metrics.RolloutsPath(run, 6))
	if err != nil {
		t.Fatal(err)
	}
	weighted := 0
	for _, g := range groups {
		if len(g.Samples) != 4 || g.PromptID == "" || g.Lang != "es" || g.Prompt == "" {
			t.Fatalf("group %d: %d samples, id %q, lang %q", g.Group, len(g.Samples), g.PromptID, g.Lang)
		}
		for _, s := range g.Samples {
			if len(s.Weights) != len(s.Offsets) || len(s.Offsets) == 0 || len(s.Levels) != 5 {
				t.Fatalf("sample %d: %d weights for %d tokens, levels %v", s.Index, len(s.Weights), len(s.Offsets), s.Levels)
			}
			for i, w := range s.Weights {
				inSpan := false
				for _, sp := range s.Spans {
					o := s.Offsets[i]
					inSpan = inSpan || (o[0] < sp[1] && sp[0] < o[1] && o[0] < o[1] && sp[0] < sp[1])
				}
				if (w == 3) != inSpan || (w != 3 && w != 1) {
					t.Fatalf("sample %d token %d %v: w %g, overlaps a value span %v", s.Index, i, s.Offsets[i], w, inSpan)
				}
				if w == 3 {
					weighted++
				}
			}
		}
	}
	if len(groups) != 2 || weighted == 0 {
		t.Fatalf("%d groups, %d β-weighted tokens", len(groups), weighted)
	}
	recs, err := metrics.Read(filepath.Join(run, metrics.File))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if _, ok := r.Values["fcm.es"]; r.Kind == "eval" && !ok {
			t.Fatalf("eval line of step %d lacks fcm.es: %v", r.Step, r.Values)
		}
	}
	if _, stderr, code := runTrain(t, "plot", run, filepath.Join(t.TempDir(), "missing")); code == 0 || !strings.Contains(stderr, "missing") {
		t.Fatalf("a missing second run: exit %d\n%s", code, stderr)
	}
}

// `train plot --serve 127.0.0.1:0 RUN` serves the live page until SIGINT,
// then shuts down cleanly (exit 0).
func TestPlotServe(t *testing.T) {
	run := t.TempDir()
	os.WriteFile(filepath.Join(run, metrics.File), []byte("{\"step\":1,\"kind\":\"train\",\"loss\":2}\n{\"step\":2,\"kind\":\"train\",\"loss\":1}\n"), 0o644)
	cmd := trainCmd(t, "plot", "--serve", "127.0.0.1:0", run)
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(errPipe)
	var url string
	for url == "" && lines.Scan() {
		if m := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+/)`).FindStringSubmatch(lines.Text()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		t.Fatal("train plot --serve printed no address")
	}
	rest := make(chan string, 1)
	go func() { b, _ := io.ReadAll(errPipe); rest <- string(b) }()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), `"live":true`) || !strings.Contains(string(page), "connect-src 'self'") {
		t.Fatalf("GET %s: %d, %d bytes", url, resp.StatusCode, len(page))
	}
	if _, err := os.Stat(filepath.Join(run, metrics.ReportFile)); err == nil {
		t.Fatal("--serve wrote report.html")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	werr := make(chan error, 1)
	go func() { werr <- cmd.Wait() }()
	select {
	case err := <-werr:
		if out := <-rest; err != nil || !strings.Contains(out, "serve: stopped") {
			t.Fatalf("after SIGINT: %v\n%s", err, out)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("train plot --serve did not stop on SIGINT")
	}
	if _, stderr, code := runTrain(t, "plot", "--serve", "localhost", run); code == 0 || !strings.Contains(stderr, "port") {
		t.Fatalf("--serve localhost: exit %d\n%s", code, stderr)
	}
	missing := filepath.Join(run, "missing")
	if _, stderr, code := runTrain(t, "plot", "--serve", "127.0.0.1:0", missing); code == 0 || !strings.Contains(stderr, missing+" is not a run directory") {
		t.Fatalf("--serve of a missing run: exit %d\n%s", code, stderr)
	}
}
