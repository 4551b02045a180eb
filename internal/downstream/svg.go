package downstream

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// The chart: four panels over the run's time, one line per result in each
// (the limit, the most in flight, the mean latency, the requests refused
// per second, shed and refused together), and the downstream's capacity
// dashed in the first two. Hand-written SVG, so that the root module needs
// no plotting library; the output is the same bytes for the same results.
const (
	svgW, panelH     = 900, 170
	left, right, top = 70, 20, 70
	gap              = 40
)

var palette = []string{"#7f7f7f", "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"}

// panel is one chart: a title, a unit, and a value per bin of a result.
type panel struct {
	title string
	value func(r *Result, b Bin) float64
}

var panels = []panel{
	{"limit", func(_ *Result, b Bin) float64 { return float64(b.Limit) }},
	{"most in flight", func(_ *Result, b Bin) float64 { return float64(b.MaxInFlight) }},
	{"mean latency (ms)", func(_ *Result, b Bin) float64 { return b.MeanLatency.Seconds() * 1000 }},
	{"refused per second", func(r *Result, b Bin) float64 { return float64(b.Shed+b.Refused) / r.Bin.Seconds() }},
}

// SVG draws the results, which share one downstream c and one bin width,
// into w, headed by title.
func SVG(w io.Writer, title string, c Config, results []*Result) error {
	if len(results) == 0 {
		return fmt.Errorf("downstream: no results to draw")
	}
	var b strings.Builder
	h := top + len(panels)*(panelH+gap)
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", svgW, h, svgW, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14">%s</text>`+"\n", left, escape(title))
	x := left
	for i, r := range results {
		fmt.Fprintf(&b, `<line x1="%d" y1="40" x2="%d" y2="40" stroke="%s" stroke-width="2"/><text x="%d" y="44">%s</text>`+"\n",
			x, x+20, palette[i%len(palette)], x+24, escape(r.Pool.Name))
		x += 34 + 8*len(r.Pool.Name)
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="40" x2="%d" y2="40" stroke="black" stroke-dasharray="4 3"/><text x="%d" y="44">capacity</text>`+"\n", x, x+20, x+24)
	span := time.Duration(len(results[0].Bins)) * results[0].Bin
	for i, p := range panels {
		drawPanel(&b, top+i*(panelH+gap), p, span, c, results, i < 2)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func drawPanel(b *strings.Builder, y0 int, p panel, span time.Duration, c Config, results []*Result, capacity bool) {
	top := 0.0
	for _, r := range results {
		for _, bin := range r.Bins {
			top = max(top, p.value(r, bin))
		}
	}
	if capacity {
		for _, ph := range c.Phases {
			top = max(top, float64(ph.Servers))
		}
	}
	ymax, step := niceMax(top)
	pw := float64(svgW - left - right)
	sx := func(t time.Duration) float64 { return float64(left) + pw*t.Seconds()/span.Seconds() }
	sy := func(v float64) float64 { return float64(y0+panelH) - float64(panelH)*v/ymax }
	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", left, y0-6, p.title)
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#ccc"/>`+"\n", left, y0, svgW-left-right, panelH)
	for v := 0.0; v <= ymax+step/2; v += step {
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, sy(v)+4, trim(v))
	}
	tstep := niceStep(span.Seconds() / 8)
	for t := 0.0; t <= span.Seconds()+tstep/2; t += tstep {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%ss</text>`+"\n", sx(time.Duration(t*1e9)), y0+panelH+14, trim(t))
	}
	if capacity {
		var pts []string
		for i, ph := range c.Phases {
			end := span
			if i+1 < len(c.Phases) {
				end = min(c.Phases[i+1].At, span)
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", sx(ph.At), sy(float64(ph.Servers)), sx(end), sy(float64(ph.Servers))))
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="black" stroke-dasharray="4 3"/>`+"\n", strings.Join(pts, " "))
	}
	for i, r := range results {
		pts := make([]string, 0, len(r.Bins))
		for k, bin := range r.Bins {
			t := time.Duration(k)*r.Bin + r.Bin/2
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", sx(t), sy(p.value(r, bin))))
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", strings.Join(pts, " "), palette[i%len(palette)])
	}
}

// niceMax is a round top for an axis holding v, and its tick step.
func niceMax(v float64) (float64, float64) {
	if v <= 0 {
		return 1, 1
	}
	s := niceStep(v / 4)
	return math.Ceil(v/s) * s, s
}

// niceStep is the 1, 2 or 5 times a power of ten at or above v.
func niceStep(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func trim(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
