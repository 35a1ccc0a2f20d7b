package metrics

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var langs4 = []string{"es", "fr", "it", "nl"}

// syntheticRun writes a GRPO run of steps steps into dir: every key an RL
// step logs, an evaluation (with per-language rates) every 20 steps, a
// full rollouts file at each evaluation (MaxRolloutGroups ×
// MaxRolloutSamples responses of 512 tokens), config.yaml, a best/ and
// two checkpoints.
func syntheticRun(t *testing.T, dir string, steps int, seed float64) {
	t.Helper()
	must(t, os.MkdirAll(dir, 0o755))
	l, err := Open(filepath.Join(dir, File), -1)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	keys := []string{"adv_abs_mean", "adv_mean", "clip_frac", "entropy", "epoch", "grad_norm", "kl", "kl_first", "kl_loss",
		"loss", "lr", "pg_loss", "rate_aca", "rate_alc", "rate_fcm", "rate_tid", "rate_tsa", "ratio_dev_first",
		"ref_tokens_per_s", "resp_len", "resp_len_max", "reward_alc_cont", "reward_max", "reward_mean", "reward_min",
		"reward_std", "rollout_tokens_per_s", "time_ref_s", "time_reward_s", "time_rollout_s", "time_step_s",
		"time_train_s", "train_tokens_per_s", "truncated_frac", "updates", "zero_std_frac"}
	for s := 1; s <= steps; s++ {
		m := Metrics{}
		for i, k := range keys {
			m[k] = seed + math.Sin(float64(s*(i+1))/37)/3 + float64(s)/float64(steps)
		}
		if err := l.Log("train", s, m); err != nil {
			t.Fatal(err)
		}
		if s%20 != 0 {
			continue
		}
		e := Metrics{"loss": 1.2, "reward_mean": float64(s) / 100, "exact_match": 0.3, "name_acc": 0.8, "arg_score": 0.5}
		for i, k := range []string{"tid", "tsa", "aca", "alc", "fcm"} {
			e[k] = 0.9 - 0.1*float64(i) + float64(s)/2000
			for j, lang := range langs4 {
				e[k+"."+lang] = e[k] - 0.01*float64(j)
			}
		}
		if err := l.Log("eval", s, e); err != nil {
			t.Fatal(err)
		}
		writeSyntheticRollouts(t, dir, s)
	}
	cfg := "# train grpo --config x\nalgo: grpo\nmodel:\n    path: models/qwen\noptim:\n    max_steps: " + fmt.Sprint(steps) +
		"\nreward:\n    name: rm3\ntoken_weight:\n    beta: 3\ncheckpoint:\n    best_metric: fcm\n"
	must(t, os.WriteFile(filepath.Join(dir, configFile), []byte(cfg), 0o644))
	must(t, os.MkdirAll(filepath.Join(dir, "best"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "best", "trainer_state.json"), []byte(`{"step": 180, "best_metric": 0.69}`), 0o644))
	for _, s := range []int{180, steps} {
		must(t, os.MkdirAll(filepath.Join(dir, "checkpoints", fmt.Sprintf("step-%06d", s)), 0o755))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// writeSyntheticRollouts writes full groups of 512-token responses with
// Spanish arguments (multi-byte characters) for step.
func writeSyntheticRollouts(t *testing.T, dir string, step int) {
	t.Helper()
	var groups []RolloutGroup
	for g := 0; g < MaxRolloutGroups; g++ {
		grp := RolloutGroup{Group: g, PromptID: fmt.Sprintf("es-%04d", g), Lang: "es", Prompt: "¿Qué tiempo hará mañana en Bogotá? " + strings.Repeat("Dímelo, por favor. ", 40),
			Gold: json.RawMessage(`[{"name":"get_weather","arguments":{"city":"Bogotá","day":"mañana"}}]`)}
		for i := 0; i < MaxRolloutSamples; i++ {
			var text strings.Builder
			var offs [][2]int
			var w []float32
			var spans [][2]int
			for tok := 0; tok < 512; tok++ {
				piece := []string{`{"name": `, `"get_weather", `, `"arguments": {"city": "`, "Bogotá", `"}} `}[tok%5]
				start := text.Len()
				text.WriteString(piece)
				offs = append(offs, [2]int{start, text.Len()})
				if tok%5 == 3 {
					spans = append(spans, [2]int{start, text.Len()})
					w = append(w, 3)
				} else {
					w = append(w, 1)
				}
			}
			grp.Samples = append(grp.Samples, RolloutSample{Index: i, Text: text.String(), Offsets: offs, Weights: w, Spans: spans,
				Reward: float64(i) / 3, Gate: "fcm", Parts: map[string]float64{"alc_cont": 2}, Adv: float64(i)/4 - 1, Finish: "length",
				Levels: map[string]bool{"tid": true, "tsa": true, "aca": true, "alc": i%2 == 0, "fcm": false}})
		}
		groups = append(groups, grp)
	}
	if _, err := WriteRollouts(dir, step, groups); err != nil {
		t.Fatal(err)
	}
}

// pageData extracts and parses the page's JSON block.
func pageData(t *testing.T, page []byte) reportData {
	t.Helper()
	m := regexp.MustCompile(`(?s)<script type="application/json" id="report-data">(.*?)</script>`).FindSubmatch(page)
	if m == nil {
		t.Fatal("the page has no report-data block")
	}
	var d reportData
	if err := json.Unmarshal(m[1], &d); err != nil {
		t.Fatalf("report-data: %v", err)
	}
	return d
}

// The page of a 200-step run with rollouts at every evaluation stays
// under 5 MB and embeds the rollouts of the last evaluation only.
func TestReportSize200Steps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "grpo-200")
	syntheticRun(t, dir, 200, 0)
	path, err := WriteReport([]string{dir}, ReportOptions{Now: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	var rollouts int64
	steps, _ := RolloutSteps(dir)
	for _, s := range steps {
		fi, _ := os.Stat(RolloutsPath(dir, s))
		rollouts += fi.Size()
	}
	t.Logf("report.html of a 200-step run: %d bytes (rollouts files: %d in %d files)", st.Size(), rollouts, len(steps))
	if st.Size() >= 5<<20 {
		t.Fatalf("report.html is %d bytes, want < 5 MB", st.Size())
	}
	page, _ := os.ReadFile(path)
	d := pageData(t, page)
	if d.Rollouts == nil || d.Rollouts.Step != 200 || d.Rollouts.EvalStep != 200 || len(d.Rollouts.Groups) != MaxRolloutGroups ||
		len(d.Rollouts.Groups[0].Samples) != MaxRolloutSamples || d.Rollouts.Beta != 3 {
		t.Fatalf("rollouts section: %+v", d.Rollouts)
	}
	smp := d.Rollouts.Groups[0].Samples[0]
	if smp.Tokens != 512 || smp.Weighted != 102 || len(smp.Values) != 102 || smp.Values[0] != "Bogotá" {
		t.Fatalf("sample: %d tokens, %d weighted, %d values", smp.Tokens, smp.Weighted, len(smp.Values))
	}
	r := d.Runs[0]
	if r.Name != "grpo-200" || r.Algo != "grpo" || r.BestStep != 180 || r.BestMetric != "fcm" || r.LastStep != 200 || r.MaxSteps != 200 {
		t.Fatalf("run: %+v", r)
	}
	if strings.Join(r.Langs, ",") != "es,fr,it,nl" || len(r.Eval.Steps) != 10 || len(r.Train.Steps) != 200 || fmt.Sprint(r.Ckpts) != "[180 200]" {
		t.Fatalf("langs %v, %d evals, %d train lines, checkpoints %v", r.Langs, len(r.Eval.Steps), len(r.Train.Steps), r.Ckpts)
	}
	var ids []string
	for _, c := range d.Charts {
		ids = append(ids, c.ID)
	}
	if want := "reward reward_parts levels eval kl loss entropy clip resp_len fracs throughput time adv grad_norm lr"; strings.Join(ids, " ") != want {
		t.Fatalf("charts %q, want %q", strings.Join(ids, " "), want)
	}
	var others []string
	for _, c := range d.Others {
		others = append(others, c.Title)
	}
	if want := "eval arg_score, eval name_acc, train epoch, train ratio_dev_first, train reward_std, train updates"; strings.Join(others, ", ") != want {
		t.Fatalf("other charts %q, want %q", strings.Join(others, ", "), want)
	}
}

// Several runs: one page in the first run's directory, every chart over
// both runs, the first run's rollouts.
func TestReportSeveralRuns(t *testing.T) {
	a, b := filepath.Join(t.TempDir(), "run-a"), filepath.Join(t.TempDir(), "run-b")
	syntheticRun(t, a, 40, 0)
	syntheticRun(t, b, 60, 1)
	path, err := WriteReport([]string{a, b}, ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(a, ReportFile) {
		t.Fatalf("written to %s", path)
	}
	page, _ := os.ReadFile(path)
	d := pageData(t, page)
	if len(d.Runs) != 2 || d.Runs[0].Name != "run-a" || d.Runs[1].Name != "run-b" || d.Title != "argrl run report: run-a, run-b" {
		t.Fatalf("runs %+v, title %q", d.Runs, d.Title)
	}
	if d.Rollouts == nil || d.Rollouts.Run != "run-a" || d.Rollouts.Step != 40 {
		t.Fatalf("rollouts %+v", d.Rollouts)
	}
	if _, err := os.Stat(filepath.Join(b, ReportFile)); err == nil {
		t.Fatal("a report was written into the second run's directory")
	}
}

// The policy allows exactly the inlined script and style (by hash) and
// nothing else; no element points outside the page.
func TestReportPolicy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	syntheticRun(t, dir, 20, 0)
	for _, live := range []bool{false, true} {
		page, err := Report([]string{dir}, ReportOptions{Live: live})
		if err != nil {
			t.Fatal(err)
		}
		csp := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]*)">`).FindSubmatch(page)
		if csp == nil {
			t.Fatal("no Content-Security-Policy meta tag")
		}
		policy := string(csp[1])
		hash := func(s []byte) string {
			sum := sha256.Sum256(s)
			return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
		}
		script := regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindSubmatch(page)
		style := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindSubmatch(page)
		want := "default-src 'none'; script-src " + hash(script[1]) + "; style-src " + hash(style[1]) + "; img-src data:; base-uri 'none'; form-action 'none'"
		if live {
			want += "; connect-src 'self'"
		}
		if policy != want {
			t.Fatalf("live=%v: policy\n%s\nwant\n%s", live, policy, want)
		}
		if n := strings.Count(string(page), "<script"); n != 2 {
			t.Fatalf("%d script elements, want the data block and the script", n)
		}
		if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:|//)|url\(`).Find(page); m != nil {
			t.Fatalf("the page refers outside itself: %s", m)
		}
		if d := pageData(t, page); d.Live != live || (live && d.Stamp != Stamp([]string{dir})) {
			t.Fatalf("live %v, stamp %q", d.Live, d.Stamp)
		}
	}
	for name, s := range map[string]string{"report.js": reportJS, "report.css": reportCSS} {
		if strings.Contains(strings.ToLower(s), "</script") || strings.Contains(strings.ToLower(s), "</style") {
			t.Fatalf("%s would close its element early", name)
		}
	}
}

func TestReportErrors(t *testing.T) {
	if _, err := Report(nil, ReportOptions{}); err == nil {
		t.Fatal("no runs: no error")
	}
	dir := t.TempDir()
	if _, err := Report([]string{dir}, ReportOptions{}); err == nil || !strings.Contains(err.Error(), File) {
		t.Fatalf("no metrics.jsonl: %v", err)
	}
	os.WriteFile(filepath.Join(dir, File), []byte("{\"step\":1,\"kind\":\"train\",\"loss\":1}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, configFile), []byte("algo: [grpo\n"), 0o644)
	if _, err := Report([]string{dir}, ReportOptions{}); err == nil || !strings.Contains(err.Error(), configFile) {
		t.Fatalf("bad config.yaml: %v", err)
	}
	os.Remove(filepath.Join(dir, configFile))
	page, err := Report([]string{dir}, ReportOptions{}) // an SFT-like run without config, evals or rollouts
	if err != nil {
		t.Fatal(err)
	}
	if d := pageData(t, page); d.Rollouts != nil || len(d.Charts) != 1 || d.Charts[0].ID != "loss" || d.Runs[0].Langs == nil || d.Runs[0].Ckpts == nil {
		t.Fatalf("minimal run: %+v", d) // the script reads langs and ckpts as arrays
	}
}
