package sim

import (
	"testing"
	"time"
)

// TestJitterRanges pins each jitter's range: after a RetryAfter D, never
// before it (full: [D, 2D], equal: [D, 3D/2]); after a back-off D, the
// classic ones (full: [0, D], equal: [D/2, D]); none: D.
func TestJitterRanges(t *testing.T) {
	const d = int64(time.Second)
	for _, tc := range []struct {
		exp    bool
		jitter Jitter
		lo, hi int64
	}{
		{false, NoJitter, d, d}, {false, Full, d, 2 * d}, {false, Equal, d, d + d/2},
		{true, NoJitter, d, d}, {true, Full, 0, d}, {true, Equal, d / 2, d},
	} {
		rt := newRetrier(Retry{Max: 1, Exp: tc.exp, Base: time.Second, Cap: time.Minute, Jitter: tc.jitter}, 1)
		lo, hi := int64(1<<62), int64(0)
		for range 10000 {
			w := rt.wait(1, d)
			lo, hi = min(lo, w), max(hi, w)
		}
		// 10,000 draws come within 0.1% of either end.
		if lo < tc.lo || hi > tc.hi || lo-tc.lo > d/1000 || tc.hi-hi > d/1000 {
			t.Errorf("exp %v jitter %d: waits in [%v, %v], want [%v, %v]", tc.exp, tc.jitter, time.Duration(lo), time.Duration(hi), time.Duration(tc.lo), time.Duration(tc.hi))
		}
	}
}

// TestBackoffDoublesToTheCap: retry k waits base·2^(k-1), at most cap,
// and a refusal that names no instant falls back on it.
func TestBackoffDoublesToTheCap(t *testing.T) {
	rt := newRetrier(Retry{Max: 70, Exp: true, Base: 100 * time.Millisecond, Cap: time.Second}, 1)
	for k, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 70: time.Second} {
		if got := time.Duration(rt.wait(k, int64(time.Hour))); got != want {
			t.Errorf("retry %d waits %v, want %v", k, got, want)
		}
	}
	rt.Exp = false
	if got := time.Duration(rt.wait(2, 0)); got != 200*time.Millisecond {
		t.Errorf("a RetryAfter of none: waits %v, want the back-off's 200ms", got)
	}
}
