// Package human formats durations one way everywhere the simulator prints
// them: three significant digits, whole seconds from a minute on, and no
// trailing zero units ("1m", never "1m0s" beside "60s").
package human

import (
	"strings"
	"time"
)

// Duration formats d to three significant digits, whole seconds from a
// minute on: 0s, 417µs, 97.8ms, 1.25s, 2m53s, 1m, 1h, 1h30m. Whole
// durations below that precision print exactly, so that what reads back
// with time.ParseDuration is the same duration.
func Duration(d time.Duration) string {
	if d <= 0 {
		return d.String()
	}
	unit := time.Duration(1)
	for v := d; v >= 1000; v /= 10 {
		unit *= 10
	}
	// Whole seconds need no more rounding: 2m53s, not 2m53.4s.
	if d >= time.Minute {
		unit = max(unit, time.Second)
	}
	return Exact(d.Round(unit))
}

// Exact formats d exactly, without trailing zero units: 1m, 1h30m,
// 1m0.5s, 250ms. time.ParseDuration reads it back to d.
func Exact(d time.Duration) string {
	s := d.String()
	// 1m, 1h and 1h30m rather than 1m0s, 1h0m0s and 1h30m0s.
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
