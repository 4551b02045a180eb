package demoapi

import (
	"slices"
	"strconv"
	"time"
)

// QuotaUse returns how full the API's token window was on average, as a
// share of its limit, over the steady part of the run: from one window
// after the first arrival to the last arrival, less the overload and the
// window after it (when the window starts empty, as at the start, and
// fills up). The window holds what the API charged: each request's
// estimate from its arrival until it answered, its real usage after. It
// also returns the same share for the request window (1 s, RPS), and the
// length of the steady part. c is the API's config, s what it saw.
func QuotaUse(s Stats, c Config) (tokens, requests float64, steady time.Duration) {
	w := c.TokenWindow
	spans := []span{{s.First.Add(w), s.Last}}
	if c.OverloadFor > 0 {
		spans = subtract(spans[0], span{s.OverloadFrom, s.OverloadTo.Add(w)})
	}
	for _, sp := range spans {
		steady += sp.length()
	}
	if steady <= 0 {
		return 0, 0, 0
	}
	var tokenArea, requestArea float64 // token·seconds, request·seconds
	for _, ch := range s.Charges {
		gone := ch.At.Add(w)
		est, act := span{ch.At, minTime(ch.AnsweredAt, gone)}, span{ch.AnsweredAt, gone}
		for _, sp := range spans {
			tokenArea += float64(ch.Estimate)*sp.overlap(est).Seconds() + float64(ch.Tokens)*sp.overlap(act).Seconds()
			requestArea += sp.overlap(span{ch.At, ch.At.Add(time.Second)}).Seconds()
		}
	}
	return tokenArea / (float64(c.TokenLimit) * steady.Seconds()), requestArea / (float64(c.RPS) * steady.Seconds()), steady
}

// Percentile returns the p-th percentile of d (0 for none), sorting d.
func Percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[(len(d)-1)*p/100]
}

// Grouped formats n with thousands separators.
func Grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

// span is the half-open interval [from, to).
type span struct{ from, to time.Time }

func (s span) length() time.Duration { return max(s.to.Sub(s.from), 0) }

func (s span) overlap(o span) time.Duration {
	return span{maxTime(s.from, o.from), minTime(s.to, o.to)}.length()
}

// subtract returns a less b, as zero, one or two spans.
func subtract(a, b span) []span {
	var out []span
	if left := (span{a.from, minTime(a.to, b.from)}); left.length() > 0 {
		out = append(out, left)
	}
	if right := (span{maxTime(a.from, b.to), a.to}); right.length() > 0 {
		out = append(out, right)
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
