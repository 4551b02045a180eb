package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// A panel is one chart of the dashboard: a title (the query it draws)
// and its line.
type panel struct {
	title, query string
	points       []point
}

// The layout, in SVG user units.
const (
	chartWidth  = 760
	panelHeight = 120
	panelGap    = 56
	left, right = 64, 16
	top         = 76
)

// writeChart draws the panels one above the other on a shared time axis
// of length, the middle third (the storm) shaded.
func writeChart(w io.Writer, title string, length time.Duration, panels []panel) error {
	b := bufio.NewWriter(w)
	height := top + len(panels)*(panelHeight+panelGap)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n",
		chartWidth, height, chartWidth, height)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", left, esc(title))
	for i, p := range panels {
		drawPanel(b, p, length, top+i*(panelHeight+panelGap))
	}
	fmt.Fprintln(b, "</svg>")
	return b.Flush()
}

// drawPanel draws one panel whose frame's top is at y0.
func drawPanel(b *bufio.Writer, p panel, length time.Duration, y0 int) {
	plotW := float64(chartWidth - left - right)
	x := func(at time.Duration) float64 { return left + plotW*at.Seconds()/length.Seconds() }
	ymax := niceCeil(maxOf(p.points))
	y := func(v float64) float64 { return float64(y0+panelHeight) - panelHeight*v/ymax }

	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", left, y0-22, esc(p.title))
	fmt.Fprintf(b, `<text x="%d" y="%d" fill="#555" font-family="monospace" font-size="10">%s</text>`+"\n", left, y0-8, esc(p.query))
	fmt.Fprintf(b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#f1f1f1"/>`+"\n",
		x(length/3), y0, x(2*length/3)-x(length/3), panelHeight)
	for _, v := range []float64{0, ymax / 2, ymax} {
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ccc"/>`+"\n", left, chartWidth-right, y(v), y(v))
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y(v)+4, tick(v))
	}
	for s := time.Duration(0); s <= length; s += time.Second {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%ds</text>`+"\n", x(s), y0+panelHeight+14, int(s.Seconds()))
	}
	var line strings.Builder
	for _, pt := range p.points {
		fmt.Fprintf(&line, "%.1f,%.1f ", x(pt.at), y(pt.v))
	}
	fmt.Fprintf(b, `<polyline fill="none" stroke="#1f77b4" stroke-width="1.8" points="%s"/>`+"\n", strings.TrimSpace(line.String()))
}

func maxOf(points []point) float64 {
	m := 0.0
	for _, p := range points {
		m = max(m, p.v)
	}
	return m
}

// niceCeil is the least of 1, 2 or 5 times a power of ten that is at
// least v (1 for v ≤ 0: an empty panel still has an axis).
func niceCeil(v float64) float64 {
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

func tick(v float64) string { return strings.TrimSuffix(fmt.Sprintf("%.3g", v), ".0") }

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
