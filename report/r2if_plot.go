package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// WritePlots writes one bar chart per R2IF table into dir (r2if-R1.png,
// r2if-R2.png): a group per run, a bar per metric (accuracy, irrelevance,
// 100·ACE), the height the mean over the draws, the whisker ± one sd, a
// dot at the papers' number where our copy has one.
func (d *R2IFDraws) WritePlots(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var out []string
	for ti, t := range r2ifTables {
		p := plot.New()
		p.Title.Text = t.title
		p.Y.Label.Text = "points (mean ± sd over draws; dots: paper)"
		p.Legend.Top = true
		w := vg.Points(60) / vg.Length(len(r2ifMetrics))
		var labels []string
		for _, run := range t.runs {
			labels = append(labels, r2ifLabels[run])
		}
		lo := 0.0
		for k, m := range r2ifMetrics {
			means, errs := make(plotter.Values, len(t.runs)), make(plotter.YErrors, len(t.runs))
			paper := make([]float64, len(t.runs))
			for j, run := range t.runs {
				v, err := d.values(run, m.key)
				if err != nil {
					return out, err
				}
				mean, sd := MeanSD(v)
				means[j], paper[j] = mean, r2ifPaperCell(run, k)
				errs[j] = struct{ Low, High float64 }{sd, sd}
				lo = math.Min(lo, mean-sd)
			}
			bars, err := plotter.NewBarChart(means, w)
			if err != nil {
				return out, fmt.Errorf("report: chart: %w", err)
			}
			bars.Color = barColors[k%len(barColors)]
			bars.LineStyle.Width = 0
			bars.Offset = vg.Length(float64(k)-float64(len(r2ifMetrics)-1)/2) * w
			p.Add(bars, &whiskers{means: means, errs: errs, paper: paper, offset: bars.Offset})
			p.Legend.Add(m.col, bars)
		}
		p.NominalX(labels...)
		p.Y.Min, p.Y.Max = math.Floor(lo/10)*10, 120 // room for the legend above 100
		path := filepath.Join(dir, fmt.Sprintf("r2if-R%d.png", ti+1))
		if err := p.Save(6*vg.Inch, 4*vg.Inch, path); err != nil {
			return out, fmt.Errorf("report: %w", err)
		}
		out = append(out, path)
	}
	return out, nil
}
