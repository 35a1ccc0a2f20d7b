package metrics

// The PNGs' axes and legend: 1-2-5 ticks with labels of as few digits as
// the step needs (integers on the step axis), and the legend in a column
// to the right of the plot area.

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// niceTicks is a plot.Ticker: about five labelled ticks at multiples of a
// 1-2-5 step, four unlabelled ones between; integer: the step is at least 1.
type niceTicks struct{ integer bool }

func (t niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 4, 64)}}
	}
	step := niceStep(hi-lo, 5)
	if t.integer && step < 1 {
		step = 1
	}
	minor := step / 5
	if t.integer && minor < 1 {
		minor = 0
	}
	expo := expoAxis(lo, hi)
	var ticks []plot.Tick
	first := math.Ceil(lo/step - 1e-9)
	for k := first; k*step <= hi+step*1e-9; k++ {
		ticks = append(ticks, plot.Tick{Value: k * step, Label: tickLabel(k*step, step, expo)})
	}
	if minor > 0 {
		for k := math.Ceil(lo/minor - 1e-9); k*minor <= hi+minor*1e-9; k++ {
			if math.Mod(math.Abs(k), 5) != 0 {
				ticks = append(ticks, plot.Tick{Value: k * minor})
			}
		}
	}
	return ticks
}

// niceStep is the 1-2-5 × 10^k step that cuts span into the number of
// parts closest to n (in ratio).
func niceStep(span float64, n int) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(span/float64(n))))
	best, bestD := mag, math.Inf(1)
	for _, m := range []float64{1, 2, 5, 10} {
		if d := math.Abs(math.Log(span / (m * mag) / float64(n))); d < bestD {
			best, bestD = m*mag, d
		}
	}
	return best
}

// tickLabel formats v, a multiple of step, with the digits step needs:
// "0.25", "100", "6.22285"; with expo (an axis below 0.001 or from 10^6
// on) as "2e-5", "1.5e6".
func tickLabel(v, step float64, expo bool) string {
	if math.Abs(v) < step/2 {
		return "0"
	}
	v = math.Round(v/step) * step
	sstep := math.Floor(math.Log10(step) + 1e-9)
	if !expo {
		return strconv.FormatFloat(v, 'f', int(max(0, -sstep)), 64)
	}
	digits := int(math.Floor(math.Log10(math.Abs(v))+1e-9) - sstep)
	mant, exp, _ := strings.Cut(strconv.FormatFloat(v, 'e', max(0, digits), 64), "e")
	if strings.Contains(mant, ".") {
		mant = strings.TrimRight(strings.TrimRight(mant, "0"), ".")
	}
	e, err := strconv.Atoi(exp)
	if err != nil { // FormatFloat's 'e' form always has an integer exponent
		return mant + "e" + exp
	}
	return mant + "e" + strconv.Itoa(e)
}

// expoAxis reports whether an axis over [lo, hi] labels in exponent form.
func expoAxis(lo, hi float64) bool {
	a := math.Max(math.Abs(lo), math.Abs(hi))
	return a < 1e-3 || a >= 1e6
}

// saveWithLegend draws p with legend in a column on its right into a PNG
// at path (8 × 4.5 in).
func saveWithLegend(p *plot.Plot, legend plot.Legend, path string) error {
	const w, h = 8 * vg.Inch, 4.5 * vg.Inch
	img := vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
	dc := draw.New(img)
	legend.Top, legend.Left = true, true
	legend.ThumbnailWidth = vg.Points(20)
	lw := legend.Rectangle(dc).Size().X + vg.Points(14)
	p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
	lc := draw.Crop(dc, w-lw+vg.Points(8), 0, 0, -vg.Points(28)) // below the title's line
	legend.Draw(lc)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := img.WriteTo(f); err != nil {
		return errors.Join(fmt.Errorf("write: %w", err), f.Close())
	}
	return f.Close()
}
