package chart

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/sluicehq/sluice/cmd/sluice/internal/report"
	"github.com/sluicehq/sluice/cmd/sluice/internal/sim"
	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
)

// Files are the charts Write makes, in the order it returns their paths.
var Files = []string{"rates.png", "rates.svg", "waits.png", "waits.svg"}

// Options adjust the figures.
type Options struct {
	// Upstream, when set, is drawn in every panel as its average rate.
	Upstream *spec.Limit
	// Title heads the rates figure (the traffic, say).
	Title string
}

// figure is something drawn on a canvas of a given size.
type figure struct {
	draw func(draw.Canvas)
	w, h vg.Length
}

// Write draws both figures into dir, which it creates, each as PNG and SVG,
// and returns the paths it wrote, in the order of Files.
func Write(dir string, results []*sim.Result, opt Options) ([]string, error) {
	if len(results) == 0 {
		return nil, errors.New("chart: no results to draw")
	}
	for _, r := range results {
		if r.Bin <= 0 {
			return nil, fmt.Errorf("chart: %v was run without per-bin series", r.Limit)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	figures := map[string]figure{
		"rates": rates(results, opt),
		"waits": waitsFigure(results),
	}
	var paths []string
	for _, name := range Files {
		base, ext := name[:len(name)-4], name[len(name)-4:]
		f := figures[base]
		var c interface {
			vg.CanvasSizer
			io.WriterTo
		}
		if ext == ".png" {
			c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(f.w, f.h), vgimg.UseDPI(110), vgimg.UseBackgroundColor(color.White))}
		} else {
			c = vgsvg.New(f.w, f.h)
		}
		f.draw(draw.New(c))
		path := filepath.Join(dir, name)
		if err := save(path, c); err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

func save(path string, c io.WriterTo) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("chart: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	return nil
}

// Axis picks the unit of a time axis spanning span: seconds up to three
// minutes, minutes up to three hours, hours beyond.
func Axis(span time.Duration) (unit time.Duration, name string) {
	switch {
	case span <= 3*time.Minute:
		return time.Second, "s"
	case span <= 3*time.Hour:
		return time.Minute, "min"
	}
	return time.Hour, "h"
}

// PerSecond turns a per-bin series of units into a rate per second at the
// start of each bin, x in the given unit, with a closing point at the end
// of the last bin so that a step line covers it.
func PerSecond(units []int64, bin, unit time.Duration) plotter.XYs {
	xy := make(plotter.XYs, 0, len(units)+1)
	scale := float64(time.Second) / float64(bin)
	for k, u := range units {
		xy = append(xy, plotter.XY{X: float64(time.Duration(k)*bin) / float64(unit), Y: float64(u) * scale})
	}
	if n := len(units); n > 0 {
		xy = append(xy, plotter.XY{X: float64(time.Duration(n)*bin) / float64(unit), Y: xy[n-1].Y})
	}
	return xy
}

var (
	offeredColor  = color.RGBA{R: 150, G: 150, B: 150, A: 255}
	upstreamColor = color.RGBA{R: 200, G: 30, B: 30, A: 255}
	// palette tells limits apart in both figures (Okabe-Ito, readable by
	// most colour-blind readers).
	palette = []color.Color{
		color.RGBA{R: 0, G: 114, B: 178, A: 255},
		color.RGBA{R: 230, G: 159, B: 0, A: 255},
		color.RGBA{R: 0, G: 158, B: 115, A: 255},
		color.RGBA{R: 204, G: 121, B: 167, A: 255},
		color.RGBA{R: 86, G: 180, B: 233, A: 255},
		color.RGBA{R: 213, G: 94, B: 0, A: 255},
		color.RGBA{R: 0, G: 0, B: 0, A: 255},
	}
	// dashes tell apart lines that coincide (GCRA, token and leaky buckets
	// of one rate and size admit the same).
	dashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}, {vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}}
)

func style(i int) draw.LineStyle {
	return draw.LineStyle{Color: palette[i%len(palette)], Width: vg.Points(1.3), Dashes: dashes[i%len(dashes)]}
}

// rates is the figure of offered and admitted units per second, a panel
// per limit on one time axis.
func rates(results []*sim.Result, opt Options) figure {
	var span time.Duration
	for _, r := range results {
		span = max(span, time.Duration(len(r.AdmittedUnitsPerBin))*r.Bin)
	}
	unit, unitName := Axis(span)
	var top float64
	panels := make([][]*plot.Plot, len(results))
	legends := make([]plot.Legend, len(results))
	for i, r := range results {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%v: admitted %d of %d, at most %d in %s", r.Limit, r.Admitted, r.Offered, r.MaxInWindow, report.Duration(r.Window))
		if i == 0 && opt.Title != "" {
			p.Title.Text = opt.Title + "\n" + p.Title.Text
		}
		p.Y.Label.Text = "units/s"
		if i == len(results)-1 {
			p.X.Label.Text = "time (" + unitName + ")"
		}
		offered, _ := plotter.NewLine(PerSecond(r.OfferedUnitsPerBin, r.Bin, unit))
		offered.StepStyle = plotter.PostStep
		offered.LineStyle = draw.LineStyle{Color: offeredColor, Width: vg.Points(0.8)}
		offered.FillColor = color.RGBA{R: 225, G: 225, B: 225, A: 255}
		admitted, _ := plotter.NewLine(PerSecond(r.AdmittedUnitsPerBin, r.Bin, unit))
		admitted.StepStyle = plotter.PostStep
		admitted.LineStyle = draw.LineStyle{Color: palette[i%len(palette)], Width: vg.Points(1.2)}
		p.Add(plotter.NewGrid(), offered, admitted)
		// The legend goes beside the panel, never over the data.
		leg := plot.NewLegend()
		leg.Top, leg.Left = true, true
		leg.Add("offered", offered)
		leg.Add("admitted", admitted)
		if opt.Upstream != nil {
			rate := float64(opt.Upstream.Rate.Count) * float64(time.Second) / float64(opt.Upstream.Rate.Per)
			line, _ := plotter.NewLine(plotter.XYs{{X: 0, Y: rate}, {X: float64(span) / float64(unit), Y: rate}})
			line.LineStyle = draw.LineStyle{Color: upstreamColor, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
			p.Add(line)
			leg.Add("upstream on average", line)
			top = max(top, rate)
		}
		legends[i] = leg
		p.X.Tick.Marker, p.Y.Tick.Marker = ticks{}, ticks{}
		p.X.Min, p.X.Max = 0, float64(span)/float64(unit)
		top = max(top, p.Y.Max)
		panels[i] = []*plot.Plot{p}
	}
	for _, row := range panels { // one y scale, so that panels compare
		row[0].Y.Min, row[0].Y.Max = 0, math.Max(top*1.1, 1)
	}
	const legendW = 2.1 * vg.Inch
	w, h := 10*vg.Inch, vg.Length(len(results))*2.3*vg.Inch+0.3*vg.Inch
	return figure{w: w, h: h, draw: func(c draw.Canvas) {
		tiles := draw.Tiles{Rows: len(results), Cols: 1, PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(10), PadY: vg.Points(8)}
		plots := draw.Crop(c, 0, -legendW, 0, 0)
		cs := plot.Align(panels, tiles, plots)
		for i := range panels {
			panels[i][0].Draw(cs[i][0])
			legends[i].Draw(beside(c, plots, cs[i][0]))
		}
	}}
}

// beside is the strip of c right of plots, level with panel: where a
// panel's legend goes.
func beside(c, plots, panel draw.Canvas) draw.Canvas {
	r := vg.Rectangle{Min: vg.Point{X: plots.Max.X + vg.Points(6), Y: panel.Min.Y}, Max: vg.Point{X: c.Max.X, Y: panel.Max.Y}}
	return draw.Canvas{Canvas: c.Canvas, Rectangle: r}
}

// waitsFigure draws the wait distribution with its legend to the right.
func waitsFigure(results []*sim.Result) figure {
	p, leg := waits(results)
	const legendW = 3 * vg.Inch
	return figure{w: 8 * vg.Inch, h: 4.5 * vg.Inch, draw: func(c draw.Canvas) {
		plots := draw.Crop(c, 0, -legendW, 0, 0)
		p.Draw(plots)
		leg.Draw(beside(c, plots, draw.Crop(plots, 0, 0, 0, -vg.Points(24))))
	}}
}

// waits is the figure of the wait distribution: for each limit, the share
// of its admitted requests that waited at most x.
func waits(results []*sim.Result) (*plot.Plot, plot.Legend) {
	leg := plot.NewLegend()
	var longest time.Duration
	for _, r := range results {
		longest = max(longest, r.Max)
	}
	unit, name := waitAxis(longest)
	p := plot.New()
	p.Title.Text = "waits of admitted requests (cumulative)"
	if longest == 0 {
		p.Title.Text += ": no request waited"
	}
	p.X.Label.Text = "wait (" + name + ")"
	p.Y.Label.Text = "share admitted within"
	p.Add(plotter.NewGrid())
	for i, r := range results {
		at, below := r.WaitCDF(200)
		if at == nil {
			continue
		}
		xy := make(plotter.XYs, 0, len(at)+1)
		for k := range at {
			xy = append(xy, plotter.XY{X: float64(at[k]) / float64(unit), Y: below[k]})
		}
		// Flat to the longest wait of all, so that every line ends at the
		// right edge.
		xy = append(xy, plotter.XY{X: float64(longest) / float64(unit), Y: 1})
		line, _ := plotter.NewLine(xy)
		line.LineStyle = style(i)
		p.Add(line)
		leg.Add(fmt.Sprintf("%v (p99 %s)", r.Limit, report.Percentile(r.P99, r.P99Stranded)), line)
	}
	leg.Top, leg.Left = true, true
	p.X.Tick.Marker, p.Y.Tick.Marker = ticks{}, ticks{}
	p.X.Min, p.X.Max = 0, math.Max(float64(longest)/float64(unit), 1)
	p.Y.Min, p.Y.Max = 0, 1.02
	return p, leg
}

// waitAxis picks the unit of the wait axis: ms up to 3 s, s up to 3 min,
// min beyond.
func waitAxis(longest time.Duration) (time.Duration, string) {
	switch {
	case longest <= 3*time.Second:
		return time.Millisecond, "ms"
	case longest <= 3*time.Minute:
		return time.Second, "s"
	}
	return time.Minute, "min"
}
