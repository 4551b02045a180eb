package chart

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// ticks labels about eight round values (steps of 1, 2 or 5 times a power
// of ten) with unlabelled ticks between, written as plainly as they can be
// ("50", "2.5"), where plot.DefaultTicks labels only a few and pads them to
// one precision ("50.00").
type ticks struct{}

func (ticks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 6, 64)}}
	}
	step := nice((hi - lo) / 8)
	minor := step / 5
	if m := step / math.Pow(10, math.Floor(math.Log10(step))); m == 2 {
		minor = step / 4
	}
	var out []plot.Tick
	for i := math.Ceil(lo / minor); i*minor <= hi+minor*1e-9; i++ {
		v := i * minor
		t := plot.Tick{Value: v}
		if k := v / step; math.Abs(k-math.Round(k)) < 1e-9 {
			t.Label = strconv.FormatFloat(math.Round(k)*step, 'g', 6, 64)
		}
		out = append(out, t)
	}
	return out
}

// nice rounds x > 0 up to 1, 2 or 5 times a power of ten.
func nice(x float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}
