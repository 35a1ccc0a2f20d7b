package metrics

// RUN/report.html: the run report `train plot` writes next to the PNGs.
// One self-contained page that opens offline: the data is a JSON block,
// the script and the style sheet are inlined (report/report.js,
// report/report.css, argrl's own code), the charts are SVG drawn by that
// script, and a Content-Security-Policy meta tag (default-src 'none'; the
// inline script and style allowed by their SHA-256) keeps the browser from
// requesting anything. From the top, the page shows:
//
//   - a summary per run (algorithm, model, steps, best checkpoint);
//   - the curves (report_charts.go): reward with its min–max band and its
//     parts, the rollouts' levels, the validation rates, KL, loss, entropy,
//     clip fraction, response length, throughput, step time, gradient norm
//     and learning rate; with several runs every chart overlays them, one
//     colour per run; every other logged key under "all metrics";
//   - per run, the evaluation table: one row per evaluated step (TID …
//     FCM, exact match, name accuracy, argument score, reward, loss), then
//     TID … FCM per language (the tid.<lang> … keys), the best/ checkpoint
//     marked;
//   - for the first run, the rollouts sampled at its last evaluated step
//     (RUN/rollouts, rollouts.go): per group the prompt and the gold calls;
//     per rollout the reward, gate, parts, levels and advantage, and the
//     text with its tokens, the argument-value spans and the β-weighted
//     tokens highlighted (report_rollouts.go);
//   - the resolved config (RUN/config.yaml) of each run.
//
// The page of a 200-step run stays far below 5 MB: the metrics are columns
// of numbers and only one step's bounded rollout sample is embedded.

import (
	"github.com/argrl/argrl/internal/atomicfile"

	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// ReportFile is the run report's name inside RUN/.
const ReportFile = "report.html"

// configFile is the resolved config's name inside RUN/ (trainer.ConfigFile).
const configFile = "config.yaml"

//go:embed report/report.js
var reportJS string

//go:embed report/report.css
var reportCSS string

// ReportOptions change how the page is built.
type ReportOptions struct {
	// Live makes the page poll its server's ./stamp and reload when it
	// changes (train plot --serve); the policy then also allows
	// connections to the page's own origin.
	Live bool
	// Now is the generation time shown on the page (zero: time.Now()).
	Now time.Time
}

// reportData is the page's JSON block.
type reportData struct {
	Title     string       `json:"title"`
	Generated string       `json:"generated"`
	Live      bool         `json:"live"`
	Stamp     string       `json:"stamp"`
	Runs      []reportRun  `json:"runs"`
	Charts    []chartSpec  `json:"charts"`
	Others    []chartSpec  `json:"others"`
	Rollouts  *rolloutView `json:"rollouts"`
}

// reportRun is one run's metrics, evaluations and config.
type reportRun struct {
	Name       string   `json:"name"`
	Dir        string   `json:"dir"`
	Algo       string   `json:"algo"`
	Model      string   `json:"model"`
	Reward     string   `json:"reward"`
	Beta       float64  `json:"beta"`
	MaxSteps   int      `json:"max_steps"`
	LastStep   int      `json:"last_step"`
	BestMetric string   `json:"best_metric"`
	BestStep   int      `json:"best_step"` // 0: no best/ checkpoint
	Config     string   `json:"config"`
	Train      columns  `json:"train"`
	Eval       columns  `json:"eval"`
	Langs      []string `json:"langs"` // from the eval keys tid.<lang>
	Ckpts      []int    `json:"ckpts"` // steps with a checkpoint on disk
}

// columns are one kind's lines of a metrics log: the steps, and per key
// the values at those steps (null: not logged there).
type columns struct {
	Steps []int                 `json:"steps"`
	Keys  map[string][]*float64 `json:"keys"`
}

// reportConfig is what the page reads from RUN/config.yaml.
type reportConfig struct {
	Algo  string `yaml:"algo"`
	Model struct {
		Path string `yaml:"path"`
	} `yaml:"model"`
	Optim struct {
		MaxSteps int `yaml:"max_steps"`
	} `yaml:"optim"`
	Reward struct {
		Name string `yaml:"name"`
	} `yaml:"reward"`
	TokenWeight struct {
		Beta float64 `yaml:"beta"`
	} `yaml:"token_weight"`
	Checkpoint struct {
		BestMetric string `yaml:"best_metric"`
	} `yaml:"checkpoint"`
}

// Report builds the page of runs (the first one's rollouts; see the file
// header).
func Report(runs []string, o ReportOptions) ([]byte, error) {
	if len(runs) == 0 {
		return nil, errors.New("report: no run directory")
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	d := reportData{Generated: now.Format("2006-01-02 15:04:05 MST"), Live: o.Live}
	if o.Live {
		d.Stamp = Stamp(runs)
	}
	var names []string
	for _, dir := range runs {
		r, err := loadRun(dir)
		if err != nil {
			return nil, err
		}
		d.Runs = append(d.Runs, r)
		names = append(names, r.Name)
	}
	d.Title = "argrl run report: " + strings.Join(names, ", ")
	d.Charts, d.Others = reportCharts(d.Runs)
	rv, err := loadRolloutView(runs[0], d.Runs[0])
	if err != nil {
		return nil, err
	}
	d.Rollouts = rv
	return renderPage(d)
}

// WriteReport writes the page of runs to runs[0]/report.html atomically
// and returns its path.
func WriteReport(runs []string, o ReportOptions) (string, error) {
	page, err := Report(runs, o)
	if err != nil {
		return "", err
	}
	path := filepath.Join(runs[0], ReportFile)
	if err := atomicfile.WriteFile(path, page); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	return path, nil
}

// loadRun reads a run directory: metrics.jsonl (required), config.yaml,
// best/trainer_state.json and the checkpoints on disk.
func loadRun(dir string) (reportRun, error) {
	r := reportRun{Name: filepath.Base(filepath.Clean(dir)), Dir: dir}
	if abs, err := filepath.Abs(dir); err == nil {
		r.Name = filepath.Base(abs)
	}
	recs, err := Read(filepath.Join(dir, File))
	if err != nil {
		return r, fmt.Errorf("report: %w", err)
	}
	if len(recs) == 0 {
		return r, fmt.Errorf("report: %s holds no metric lines", filepath.Join(dir, File))
	}
	r.Train, r.Eval = toColumns(recs, "train"), toColumns(recs, "eval")
	for _, rec := range recs {
		r.LastStep = max(r.LastStep, rec.Step)
	}
	r.Langs = []string{}
	langs := map[string]bool{}
	for k := range r.Eval.Keys {
		if m, lang, ok := strings.Cut(k, "."); ok && m == "tid" && lang != "" {
			langs[lang] = true
		}
	}
	for l := range langs {
		r.Langs = append(r.Langs, l)
	}
	sort.Strings(r.Langs)

	raw, err := os.ReadFile(filepath.Join(dir, configFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return r, fmt.Errorf("report: %w", err)
	}
	r.Config = string(raw)
	var cfg reportConfig
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return r, fmt.Errorf("report: %s: %w", filepath.Join(dir, configFile), err)
	}
	r.Algo, r.Model, r.MaxSteps, r.Reward, r.Beta = cfg.Algo, cfg.Model.Path, cfg.Optim.MaxSteps, cfg.Reward.Name, cfg.TokenWeight.Beta
	r.BestMetric = cfg.Checkpoint.BestMetric
	r.BestStep = bestStep(dir, r.BestMetric, recs)
	r.Ckpts, err = checkpointSteps(dir)
	return r, err
}

// toColumns turns the lines of one kind into columns.
func toColumns(recs []Record, kind string) columns {
	c := columns{Steps: []int{}, Keys: map[string][]*float64{}}
	for _, rec := range recs {
		if rec.Kind != kind {
			continue
		}
		i := len(c.Steps)
		c.Steps = append(c.Steps, rec.Step)
		for k, v := range rec.Values {
			col := c.Keys[k]
			for len(col) < i {
				col = append(col, nil)
			}
			v := v
			c.Keys[k] = append(col, &v)
		}
	}
	for k, col := range c.Keys {
		for len(col) < len(c.Steps) {
			col = append(col, nil)
		}
		c.Keys[k] = col
	}
	return c
}

// bestStep is the step of RUN/best: its trainer_state.json's "step", or
// without one the first evaluation with the highest best metric.
func bestStep(dir, metric string, recs []Record) int {
	raw, err := os.ReadFile(filepath.Join(dir, "best", "trainer_state.json"))
	if err == nil {
		var st struct {
			Step int `json:"step"`
		}
		if json.Unmarshal(raw, &st) == nil && st.Step > 0 {
			return st.Step
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "best")); err != nil || metric == "" {
		return 0
	}
	best, step := 0.0, 0
	for _, rec := range recs {
		if v, ok := rec.Values[metric]; ok && rec.Kind == "eval" && (step == 0 || v > best) {
			best, step = v, rec.Step
		}
	}
	return step
}

// checkpointSteps lists the steps of RUN/checkpoints/step-NNNNNN.
func checkpointSteps(dir string) ([]int, error) {
	ents, err := os.ReadDir(filepath.Join(dir, "checkpoints"))
	if errors.Is(err, os.ErrNotExist) {
		return []int{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	steps := []int{}
	for _, e := range ents {
		if n, ok := strings.CutPrefix(e.Name(), "step-"); ok && e.IsDir() {
			if s, err := strconv.Atoi(n); err == nil {
				steps = append(steps, s)
			}
		}
	}
	sort.Ints(steps)
	return steps, nil
}

// Stamp summarizes the files the page of runs is built from (names,
// sizes, modification times): it changes when any of them does.
func Stamp(runs []string) string {
	h := sha256.New()
	stat := func(path string) {
		if st, err := os.Stat(path); err == nil {
			fmt.Fprintf(h, "%s %d %d\n", path, st.Size(), st.ModTime().UnixNano())
		}
	}
	for _, dir := range runs {
		for _, f := range []string{File, configFile, filepath.Join("best", "trainer_state.json"), filepath.Join("checkpoints", "latest")} {
			stat(filepath.Join(dir, f))
		}
		steps, err := RolloutSteps(dir)
		if err != nil { // the stamp changes with what the report can read
			fmt.Fprintf(h, "%s: %v\n", dir, err)
		}
		for _, s := range steps {
			stat(RolloutsPath(dir, s))
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// renderPage assembles the HTML.
func renderPage(d reportData) ([]byte, error) {
	js, err := json.Marshal(d) // escapes <, > and & inside the strings
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	hash := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	script, style := "\n"+reportJS, "\n"+reportCSS
	csp := "default-src 'none'; script-src " + hash(script) + "; style-src " + hash(style) +
		"; img-src data:; base-uri 'none'; form-action 'none'"
	if d.Live {
		csp += "; connect-src 'self'"
	}
	var b bytes.Buffer
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	// The policy holds no '"', '<' or '&' (keywords and base64 hashes).
	fmt.Fprintf(&b, "<meta http-equiv=\"Content-Security-Policy\" content=\"%s\">\n", csp)
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	fmt.Fprintf(&b, "<title>%s</title>\n", html.EscapeString(d.Title))
	fmt.Fprintf(&b, "<style>%s</style>\n", style)
	fmt.Fprintf(&b, "<script type=\"application/json\" id=\"report-data\">%s</script>\n", js)
	fmt.Fprintf(&b, "<script>%s</script>\n", script)
	b.WriteString("</head>\n<body>\n<div id=\"report-status\" data-state=\"loading\">loading…</div>\n")
	b.WriteString("<noscript>This report draws its charts and tables with JavaScript.</noscript>\n")
	b.WriteString("<main id=\"report\"></main>\n</body>\n</html>\n")
	return b.Bytes(), nil
}
