package report

// Bar charts of the reproduction: one PNG per table, a group of bars per
// method (ALC and FCM, or the table's columns), the height the mean over
// the draws, the whisker ± one sd, and a dot at the paper's number.

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

var barColors = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff},
	color.RGBA{0x2c, 0xa0, 0x2c, 0xff}, color.RGBA{0xd6, 0x27, 0x28, 0xff},
}

// WritePlots writes one PNG per table of paper 000's reproduction into
// dir and returns the paths.
func (d *Draws) WritePlots(dir string) ([]string, error) { return d.writePlots(dir, paperTables) }

// writePlots writes one PNG per table into dir and returns the paths.
func (d *Draws) writePlots(dir string, tables []paperTable) ([]string, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var out []string
	for i, t := range tables {
		cols := chartColumns(t)
		p := plot.New()
		p.Title.Text = t.title
		if c, ok := chartTitles[t.title]; ok {
			p.Title.Text = c
		}
		p.Y.Label.Text = "% (mean ± sd over draws; dots: paper)"
		p.Legend.Top = true
		p.Legend.Left = false
		w := vg.Points(60) / vg.Length(max(1, len(cols)))
		var labels []string
		var rows []tableRow // the rows run (a row left out of the protocol has no bar)
		for _, r := range t.rows {
			if d.ran(r) {
				rows = append(rows, r)
				labels = append(labels, r.label)
			}
		}
		for k, ci := range cols {
			means, errs := make(plotter.Values, len(rows)), make(plotter.YErrors, len(rows))
			paper := make([]float64, len(rows))
			for j, r := range rows {
				v, err := d.values(r.cells[ci])
				if err != nil {
					return out, err
				}
				m, sd := MeanSD(v)
				means[j] = m
				errs[j] = struct{ Low, High float64 }{sd, sd}
				paper[j] = r.paper[ci]
			}
			bars, err := plotter.NewBarChart(means, w)
			if err != nil {
				return out, fmt.Errorf("report: chart: %w", err)
			}
			bars.Color = barColors[k%len(barColors)]
			bars.LineStyle.Width = 0
			bars.Offset = vg.Length(float64(k)-float64(len(cols)-1)/2) * w
			p.Add(bars, &whiskers{means: means, errs: errs, paper: paper, offset: bars.Offset})
			p.Legend.Add(t.cols[ci], bars)
		}
		p.NominalX(labels...)
		p.Y.Min, p.Y.Max = 0, 100
		name := fmt.Sprintf("table%d.png", i+1)
		if n, _, ok := strings.Cut(strings.TrimPrefix(t.title, "Table "), ":"); ok {
			name = "table" + strings.ReplaceAll(strings.Fields(n)[0], "§", "sec") + ".png"
		}
		path := filepath.Join(dir, name)
		if err := p.Save(vg.Length(max(4, len(rows)))*1.6*vg.Inch, 4*vg.Inch, path); err != nil {
			return out, fmt.Errorf("report: %w", err)
		}
		out = append(out, path)
	}
	return out, nil
}

// chartColumns are the columns a table's chart shows: ALC and FCM where
// the table has them, else every column.
func chartColumns(t paperTable) []int {
	var out []int
	for i, c := range t.cols {
		if strings.HasSuffix(c, "ALC") || strings.HasSuffix(c, "FCM") {
			out = append(out, i)
		}
	}
	if len(out) == 0 {
		for i := range t.cols {
			out = append(out, i)
		}
	}
	return out
}

// whiskers draws ± sd over each bar and a dot at the paper's number, at
// the bar's offset from its category (canvas units).
type whiskers struct {
	means  plotter.Values
	errs   plotter.YErrors
	paper  []float64
	offset vg.Length
}

func (e *whiskers) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	ls := draw.LineStyle{Color: color.Black, Width: vg.Points(0.8)}
	dot := draw.GlyphStyle{Shape: draw.CircleGlyph{}, Color: color.Black, Radius: vg.Points(2.5)}
	for i, m := range e.means {
		x := tx(float64(i)) + e.offset
		lo, hi := ty(m-e.errs[i].Low), ty(m+e.errs[i].High)
		c.StrokeLine2(ls, x, lo, x, hi)
		c.StrokeLine2(ls, x-vg.Points(2), hi, x+vg.Points(2), hi)
		c.StrokeLine2(ls, x-vg.Points(2), lo, x+vg.Points(2), lo)
		// No number in the paper: no dot. NoClip: the first category's
		// left bar lies left of the data area's edge (category 0), where
		// DrawGlyph would drop its dot.
		if !math.IsNaN(e.paper[i]) {
			c.DrawGlyphNoClip(dot, vg.Point{X: x, Y: ty(e.paper[i])})
		}
	}
}
