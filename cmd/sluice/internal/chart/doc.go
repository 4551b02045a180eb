// Package chart draws the simulator's results with gonum.org/v1/plot, as PNG
// and SVG: the units offered and admitted per second for every limit, one
// panel each on a shared time axis (with the upstream's average rate when
// there is one), and the distribution of waits, one line per limit.
//
// The figures are functions of the results only. Nothing here is shared
// between calls; separate calls are safe for concurrent use.
package chart
