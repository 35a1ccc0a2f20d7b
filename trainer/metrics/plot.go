package metrics

// `train plot RUN`: PNG curves from RUN/metrics.jsonl with gonum/plot, x =
// optimizer step. Known keys are grouped (see plotGroups); every other
// numeric key gets its own figure, named <kind>_<key>.png. A figure is
// drawn only when one of its series has a value, so SFT runs get no reward
// plot and RL runs no eval plot before their first evaluation.

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

type plotSeries struct{ kind, key string }

type plotGroup struct {
	file, title, ylabel string
	series              []plotSeries
}

func seriesOf(kind string, keys ...string) []plotSeries {
	var out []plotSeries
	for _, k := range keys {
		out = append(out, plotSeries{kind, k})
	}
	return out
}

var plotGroups = []plotGroup{
	{"loss.png", "Loss", "loss", append(seriesOf("train", "loss"), seriesOf("eval", "loss")...)},
	{"lr.png", "Learning rate", "lr", seriesOf("train", "lr")},
	{"grad_norm.png", "Global gradient norm (before clipping)", "‖g‖", seriesOf("train", "grad_norm")},
	{"eval_metrics.png", "Validation: hierarchical metrics (paper 000 §2.3)", "rate", seriesOf("eval", "tid", "tsa", "aca", "alc", "fcm")},
	{"eval_scores.png", "Validation: exact match, name accuracy, argument score", "score", seriesOf("eval", "exact_match", "name_acc", "arg_score")},
	{"reward.png", "Reward", "reward", append(seriesOf("train", "reward_mean", "reward_min", "reward_max"), seriesOf("eval", "reward_mean")...)},
	{"kl.png", "KL to the reference", "KL", seriesOf("train", "kl")},
	{"clip_frac.png", "Clip fraction", "fraction", seriesOf("train", "clip_frac")},
	{"entropy.png", "Entropy", "nats / token", seriesOf("train", "entropy")},
}

// Plot reads the metrics log at metricsPath and writes PNGs into outDir
// (created). It returns the files written.
func Plot(metricsPath, outDir string) ([]string, error) {
	recs, err := Read(metricsPath)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("plot: %s holds no metric lines", metricsPath)
	}
	data := map[plotSeries]plotter.XYs{}
	for _, r := range recs {
		for k, v := range r.Values {
			s := plotSeries{r.Kind, k}
			data[s] = append(data[s], plotter.XY{X: float64(r.Step), Y: v})
		}
	}
	if err := os.MkdirAll(outDir, 0o777); err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	var written []string
	used := map[plotSeries]bool{}
	draw := func(g plotGroup) error {
		var present []plotSeries
		for _, s := range g.series {
			used[s] = true
			if len(data[s]) > 0 {
				present = append(present, s)
			}
		}
		if len(present) == 0 {
			return nil
		}
		p := plot.New()
		p.Title.Text = g.title
		p.X.Label.Text = "step"
		p.Y.Label.Text = g.ylabel
		p.Add(plotter.NewGrid())
		for i, s := range present {
			xys := data[s]
			sort.SliceStable(xys, func(a, b int) bool { return xys[a].X < xys[b].X })
			line, pts, err := plotter.NewLinePoints(xys)
			if err != nil {
				return fmt.Errorf("plot %s: %s: %w", g.file, s.key, err)
			}
			c := plotutil.Color(i)
			line.Color = c
			pts.Color = c
			if s.kind == "eval" { // sparse: dashed, with markers
				line.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
				pts.Shape = plotutil.Shape(i)
			} else if len(xys) > 1 { // dense: the line alone
				pts.Color = color.Transparent
			}
			p.Add(line, pts)
			name := s.key
			if len(present) > 1 || s.kind == "eval" {
				name = s.kind + " " + s.key
			}
			p.Legend.Add(name, line)
		}
		p.Legend.Top = true
		path := filepath.Join(outDir, g.file)
		if err := p.Save(8*vg.Inch, 4.5*vg.Inch, path); err != nil {
			return fmt.Errorf("plot: %s: %w", path, err)
		}
		written = append(written, path)
		return nil
	}
	for _, g := range plotGroups {
		if err := draw(g); err != nil {
			return written, err
		}
	}
	var rest []plotSeries
	for s := range data {
		if !used[s] && s.key != "epoch" {
			rest = append(rest, s)
		}
	}
	sort.Slice(rest, func(i, j int) bool {
		if rest[i].kind != rest[j].kind {
			return rest[i].kind < rest[j].kind
		}
		return rest[i].key < rest[j].key
	})
	for _, s := range rest {
		g := plotGroup{file: fileSafe(s.kind + "_" + s.key + ".png"), title: s.kind + " " + s.key, ylabel: s.key, series: []plotSeries{s}}
		if err := draw(g); err != nil {
			return written, err
		}
	}
	return written, nil
}

// fileSafe replaces characters other than letters, digits, '.', '-', '_'.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}
