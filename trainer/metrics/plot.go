package metrics

// `train plot RUN`: PNG curves from RUN/metrics.jsonl with gonum/plot, x =
// optimizer step. Only the figures that say something are drawn
// (plotGroups): loss, learning rate, gradient norm, throughput and the
// validation rates for every recipe; reward, reward parts, the rollouts'
// levels, KL, entropy, clip fraction, response length and (PPO) the value
// loss for RL runs. A figure is drawn only when one of its series has at
// least two points, so an SFT run with a single evaluation gets no
// evaluation plot; the learning rate only when it changes (a schedule,
// not a constant). Every other key (timings, update counts, the per-language rates…)
// is left to the run report (report.go), which shows them all. Axes carry
// 1-2-5 ticks labelled with as few digits as they need; the legend sits to
// the right of the curves, never on them.

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
	varying             bool // drawn only when a series varies (a setting, not an outcome)
}

func seriesOf(kind string, keys ...string) []plotSeries {
	var out []plotSeries
	for _, k := range keys {
		out = append(out, plotSeries{kind, k})
	}
	return out
}

// rewardStats are the reward keys that are not reward parts.
var rewardStats = map[string]bool{"reward_mean": true, "reward_std": true, "reward_min": true, "reward_max": true}

// plotGroups are the figures; "reward_parts.png" takes its series from the
// log (every train reward_<part>).
var plotGroups = []plotGroup{
	{"reward.png", "Reward", "reward", append(seriesOf("train", "reward_mean", "reward_min", "reward_max"), seriesOf("eval", "reward_mean")...), false},
	{"reward_parts.png", "Reward parts (mean over the rollouts that report them)", "reward", nil, false},
	{"rollout_levels.png", "Rollouts passing each level (paper 000 §2.3)", "fraction", seriesOf("train", "rate_tid", "rate_tsa", "rate_aca", "rate_alc", "rate_fcm"), false},
	{"eval_metrics.png", "Validation: hierarchical metrics (paper 000 §2.3)", "rate", seriesOf("eval", "tid", "tsa", "aca", "alc", "fcm"), false},
	{"eval_scores.png", "Validation: exact match, name accuracy, argument score", "score", seriesOf("eval", "exact_match", "name_acc", "arg_score"), false},
	{"loss.png", "Loss", "loss", append(seriesOf("train", "loss"), seriesOf("eval", "loss")...), false},
	{"kl.png", "KL to the reference", "KL", seriesOf("train", "kl"), false},
	{"entropy.png", "Entropy", "nats / token", seriesOf("train", "entropy"), false},
	{"clip_frac.png", "Clip fraction", "fraction of tokens", seriesOf("train", "clip_frac", "vf_clip_frac"), false},
	{"resp_len.png", "Response length", "tokens", seriesOf("train", "resp_len", "resp_len_max"), false},
	{"vf_loss.png", "Value loss", "loss", seriesOf("train", "vf_loss"), false},
	{"grad_norm.png", "Global gradient norm (before clipping)", "‖g‖", seriesOf("train", "grad_norm"), false},
	{"lr.png", "Learning rate", "lr", seriesOf("train", "lr"), true},
	{"throughput.png", "Throughput", "tokens / s", seriesOf("train", "tokens_per_s", "rollout_tokens_per_s", "train_tokens_per_s", "ref_tokens_per_s"), false},
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
	for _, xys := range data {
		sort.SliceStable(xys, func(a, b int) bool { return xys[a].X < xys[b].X })
	}
	if err := os.MkdirAll(outDir, 0o777); err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	var written []string
	for _, g := range plotGroups {
		if g.file == "reward_parts.png" {
			g.series = rewardParts(data)
		}
		path := filepath.Join(outDir, g.file)
		ok, err := drawGroup(g, data, path)
		if err != nil {
			return written, err
		}
		if ok {
			written = append(written, path)
		}
	}
	return written, nil
}

// rewardParts are the train reward_<part> series, sorted.
func rewardParts(data map[plotSeries]plotter.XYs) []plotSeries {
	var out []plotSeries
	for s := range data {
		if s.kind == "train" && strings.HasPrefix(s.key, "reward_") && !rewardStats[s.key] {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// informative reports whether some series of present has two points
// (and, with varying, two different values).
func informative(present []plotSeries, data map[plotSeries]plotter.XYs, varying bool) bool {
	for _, s := range present {
		xys := data[s]
		if len(xys) < 2 {
			continue
		}
		if !varying {
			return true
		}
		for _, p := range xys[1:] {
			if p.Y != xys[0].Y {
				return true
			}
		}
	}
	return false
}

// drawGroup draws g into path when it is informative; false: not drawn.
func drawGroup(g plotGroup, data map[plotSeries]plotter.XYs, path string) (bool, error) {
	var present []plotSeries
	for _, s := range g.series {
		if len(data[s]) > 0 {
			present = append(present, s)
		}
	}
	if !informative(present, data, g.varying) {
		return false, nil
	}
	p := plot.New()
	p.Title.Text = g.title
	p.X.Label.Text = "step"
	p.Y.Label.Text = g.ylabel
	p.X.Tick.Marker = niceTicks{integer: true}
	p.Y.Tick.Marker = niceTicks{}
	p.Add(plotter.NewGrid())
	legend := plot.NewLegend()
	for i, s := range present {
		xys := data[s]
		line, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return false, fmt.Errorf("plot %s: %s: %w", g.file, s.key, err)
		}
		c := plotutil.Color(i)
		line.Color = c
		line.Width = vg.Points(1.5)
		pts.Color = c
		if s.kind == "eval" { // sparse: dashed, with markers
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
			pts.Shape = plotutil.Shape(i)
		} else if len(xys) > 1 { // dense: the line alone
			pts.Color = color.Transparent
		}
		p.Add(line, pts)
		legend.Add(seriesName(s, present), line)
	}
	if err := saveWithLegend(p, legend, path); err != nil {
		return false, fmt.Errorf("plot: %s: %w", path, err)
	}
	return true, nil
}

// seriesName is a legend entry: the key, with its kind when the figure
// mixes kinds or the series is an evaluation.
func seriesName(s plotSeries, present []plotSeries) string {
	if s.kind == "eval" {
		return "eval " + s.key
	}
	for _, o := range present {
		if o.kind != s.kind {
			return s.kind + " " + s.key
		}
	}
	return s.key
}
