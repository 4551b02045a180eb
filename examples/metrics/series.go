package main

import (
	"math"
	"time"
)

// A point is one value of a panel's line.
type point struct {
	at time.Duration
	v  float64
}

// since returns, for sample k, the first sample at most window before it:
// the range a PromQL range vector [window] ending at sample k holds.
func since(samples []sample, k int, window time.Duration) int {
	j := k
	for j > 0 && samples[j-1].at >= samples[k].at-window {
		j--
	}
	return j
}

// rates is rate(v[window]) at each sample, as PromQL computes it from the
// first and last samples in the window, without its extrapolation to the
// window's edges.
func rates(samples []sample, window time.Duration, v func(sample) float64) []point {
	var out []point
	for k := range samples {
		j := since(samples, k, window)
		if j == k {
			continue
		}
		dt := (samples[k].at - samples[j].at).Seconds()
		out = append(out, point{samples[k].at, (v(samples[k]) - v(samples[j])) / dt})
	}
	return out
}

// gauges is v at each sample.
func gauges(samples []sample, v func(sample) float64) []point {
	out := make([]point, len(samples))
	for k, s := range samples {
		out[k] = point{s.at, v(s)}
	}
	return out
}

// quantiles is histogram_quantile(q, rate(sluice_limiter_wait_seconds_bucket[window]))
// at each sample that has waits in its window.
func quantiles(samples []sample, window time.Duration, q float64) []point {
	var out []point
	for k := range samples {
		j := since(samples, k, window)
		if j == k {
			continue
		}
		inc := make([]bucket, len(samples[k].buckets))
		for i, b := range samples[k].buckets {
			inc[i] = bucket{b.le, b.count - samples[j].buckets[i].count}
		}
		if v := quantile(q, inc); !math.IsNaN(v) {
			out = append(out, point{samples[k].at, v})
		}
	}
	return out
}

// quantile is Prometheus's histogram_quantile over cumulative buckets,
// +Inf last: the bucket that holds rank q·count, interpolated linearly
// within it (from 0 for the first); the last finite bound when the rank
// falls in +Inf; NaN without observations.
func quantile(q float64, buckets []bucket) float64 {
	total := buckets[len(buckets)-1].count
	if total == 0 {
		return math.NaN()
	}
	rank := q * total
	var lower, below float64
	for i, b := range buckets {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				return buckets[i-1].le
			}
			return lower + (b.le-lower)*(rank-below)/(b.count-below)
		}
		lower, below = b.le, b.count
	}
	return buckets[len(buckets)-2].le
}
