package algorithms_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// FuzzParseRate: ParseRate never panics, its errors match ErrInvalidConfig,
// and every rate it accepts is valid, configures every algorithm, and
// round-trips through String.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{
		"100/minute", "100/min", "100/m", "10/s", "10/second", "5/1h", "1000/500ms", "3/hour",
		"", "abc", "0/s", "-1/s", "10/0s", "10/fortnight", "2/5 minutes", "1/1m30s", "4/µs", "1/day",
		"9223372036854775807/ns", "1/400000h0m", "1/2562047h", " 7 / MIN ", "+5/s", "1/1.5s", "1/0.000000001s",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := algorithms.ParseRate(s)
		if err != nil {
			if !errors.Is(err, permits.ErrInvalidConfig) {
				t.Fatalf("ParseRate(%q) error %v does not match ErrInvalidConfig", s, err)
			}
			return
		}
		if err := r.Validate(); err != nil || r.Count <= 0 || r.Per <= 0 {
			t.Fatalf("ParseRate(%q) accepted %+v, which does not validate: %v", s, r, err)
		}
		back, err := algorithms.ParseRate(r.String())
		if err != nil || back != r {
			t.Fatalf("ParseRate(%q) = %+v, but ParseRate(%q) = %+v, %v", s, r, r.String(), back, err)
		}
		// One unit's span is at most Per, so a capacity of 1 always fits.
		if _, err := algorithms.NewGCRA(r, 1); err != nil {
			t.Fatalf("NewGCRA(%v, 1): %v", r, err)
		}
		if _, err := algorithms.NewTokenBucket(r, 1); err != nil {
			t.Fatalf("NewTokenBucket(1, %v): %v", r, err)
		}
		if _, err := algorithms.NewLeakyBucket(r, 1); err != nil {
			t.Fatalf("NewLeakyBucket(1, %v): %v", r, err)
		}
	})
}

// FuzzAlgorithms configures all five algorithms from (count, per, capacity)
// (the windows as capacity per per) and drives them through the timeline
// that steps encodes, two bytes a decision, in lockstep with their reference
// models: every decision must match exactly, every RetryAt must be exact to
// the nanosecond, Remaining and ResetAt must hold on clones, and the bound
// must hold over every interval. Invalid configurations must be refused
// with ErrInvalidConfig; nothing may panic.
func FuzzAlgorithms(f *testing.F) {
	ramp := []byte{0x00, 0x00, 0x00, 0x01, 0x61, 0x02, 0x80, 0x00, 0x81, 0xfc, 0xa4, 0x05, 0x21, 0x10, 0xc3, 0x00, 0x5f, 0x01, 0x7f, 0xfb, 0x00, 0xfd, 0x00, 0xff, 0xe0, 0xfe}
	retries := []byte{0x00, 0xfc, 0x00, 0x01, 0x81, 0x01, 0x80, 0x01, 0x82, 0x02, 0x81, 0xf8, 0x80, 0xfa, 0x81, 0x80, 0x80, 0x90}
	for _, seed := range []struct {
		count, per, capacity int64
		steps                []byte
	}{
		{10, int64(time.Second), 10, ramp},
		{3, int64(time.Second), 3, retries},
		{7, int64(time.Minute), 7, ramp},
		{1000, int64(500 * time.Millisecond), 1000, retries},
		{3, int64(time.Second), 1, retries},
		{1, 1, 1, ramp},
		{7, 3, 5, retries},
		{1, 1 << 60, 1, retries},
		{math.MaxInt64, int64(time.Second), math.MaxInt64, retries},
		{1<<62 + 1, 2, math.MaxInt64, retries},
		{1 << 62, 1, 1 << 62, ramp},
		{1, int64(time.Second), 1 << 62, ramp},        // refused: the burst spans too long
		{1, math.MaxInt64, 1, ramp},                   // refused: the period is too long
		{0, int64(time.Second), 10, ramp},             // refused
		{10, int64(time.Second), 0, ramp},             // refused
		{10, -int64(time.Second), 10, ramp},           // refused
		{5, int64(time.Hour), 1 << 40, retries},       // large costs
		{1_000_000_007, int64(time.Second), 12, ramp}, // a prime count
	} {
		f.Add(seed.count, seed.per, seed.capacity, seed.steps)
	}
	f.Fuzz(fuzzAlgorithms)
}

// fuzzAlgorithms is FuzzAlgorithms' check of one input.
func fuzzAlgorithms(t *testing.T, count, per, capacity int64, steps []byte) {
	if len(steps) > 512 {
		steps = steps[:512]
	}
	rate := algorithms.Rate{Count: count, Per: time.Duration(per)}
	label := fmt.Sprintf("count %d, per %d, capacity %d, steps %x", count, per, capacity, steps)

	g, err := algorithms.NewGCRA(rate, capacity)
	tb, err2 := algorithms.NewTokenBucket(rate, capacity)
	lb, err3 := algorithms.NewLeakyBucket(rate, capacity)
	if (err == nil) != (err2 == nil) || (err == nil) != (err3 == nil) {
		t.Fatalf("%s: the bucket family disagrees on the configuration: %v, %v, %v", label, err, err2, err3)
	}
	if err == nil {
		h := &harness{
			t:     t,
			label: label,
			names: []string{"GCRA", "TokenBucket", "LeakyBucket"},
			algs:  []algorithms.Algorithm{g, tb, lb},
			ref:   newRefBucket(capacity, rate),
			probe: true,
		}
		if fast := (fastPath{t, g.Clone().(*algorithms.GCRA)}); fast.open(t0, 1) {
			h.names, h.algs = append(h.names, "GCRA.TryAllowAt"), append(h.algs, fast)
			h.also = leanPath(g.Clone().(*algorithms.GCRA))
		}
		interval := gap(rate)
		fuzzTimeline(h, steps, interval, sat(interval, capacity))
	} else {
		checkRefused(t, label, err, err2, err3)
	}

	sw, err := algorithms.NewSlidingWindow(algorithms.Rate{Count: capacity, Per: time.Duration(per)})
	fw, err2 := algorithms.NewFixedWindow(algorithms.Rate{Count: capacity, Per: time.Duration(per)})
	if (err == nil) != (err2 == nil) {
		t.Fatalf("%s: the windows disagree on the configuration: %v, %v", label, err, err2)
	}
	if err != nil {
		checkRefused(t, label, err, err2)
		return
	}
	interval := max(1, per/capacity)
	fuzzTimeline(&harness{t: t, label: label, names: []string{"SlidingWindow"}, algs: []algorithms.Algorithm{sw},
		ref: &refSliding{limit: capacity, window: per}, probe: true}, steps, interval, per)
	fuzzTimeline(&harness{t: t, label: label, names: []string{"FixedWindow"}, algs: []algorithms.Algorithm{fw},
		ref: &refFixed{limit: capacity, window: per}, probe: true}, steps, interval, per)
}

func checkRefused(t *testing.T, label string, errs ...error) {
	t.Helper()
	for _, err := range errs {
		if !errors.Is(err, permits.ErrInvalidConfig) {
			t.Fatalf("%s: error %v does not match ErrInvalidConfig", label, err)
		}
	}
}

// maxStep bounds one step of a fuzzed timeline, and horizon the instants
// (after t0) that one jumps to, so that the instants stay well within those
// every algorithm represents exactly: less than 2^61ns after the first, and
// before 2116 for FixedWindow.
const (
	maxStep = 1 << 51
	horizon = 1 << 60
)

// sat returns a·b, saturated at maxStep, for a, b >= 1.
func sat(a, b int64) int64 {
	if a > maxStep/b {
		return maxStep
	}
	return min(a*b, maxStep)
}

// fuzzTimeline decodes steps two bytes at a time. The first byte's top three
// bits pick how time moves, scaled by the typical gap between admissions and
// the time to recover the full capacity; its low five bits are a multiplier.
// The second byte picks the cost.
func fuzzTimeline(h *harness, steps []byte, gap, full int64) {
	capacity := h.algs[0].Capacity()
	var now, retry int64
	for i := 0; i+1 < len(steps); i += 2 {
		kind, m := steps[i]>>5, int64(steps[i]&31)
		n := now
		switch kind {
		case 0: // the same instant
		case 1:
			n += m + 1
		case 2:
			n += sat(m+1, max(1, gap/8))
		case 3:
			n += sat(m+1, gap)
		case 4: // around the last RetryAt, unless it is beyond the horizon
			if retry != 0 && retry <= horizon {
				n = retry + m%3 - 1
			} else {
				n += m
			}
		case 5: // back in time
			n -= sat(m+1, max(1, gap/4))
		case 6: // idle
			n += sat(m+1, full)
		case 7:
			n += sat(m, max(1, full/16))
		}
		now = max(now, n)
		d := h.step(n, fuzzCost(steps[i+1], capacity))
		if !d.RetryAt.IsZero() {
			retry = d.RetryAt.Sub(t0).Nanoseconds()
		}
	}
	h.finish()
}

// fuzzCost maps a byte to a cost: small ones, fractions of the capacity, the
// capacity and its neighbours, and costs that can never pass.
func fuzzCost(c byte, capacity int64) int64 {
	switch c {
	case 255:
		return 0
	case 254:
		return -1
	case 253:
		if capacity == math.MaxInt64 {
			return math.MinInt64
		}
		return capacity + 1
	case 252:
		return capacity
	case 251:
		return max(1, capacity-1)
	}
	if capacity <= 250 {
		return 1 + int64(c)%capacity
	}
	if c < 128 {
		return 1 + int64(c)
	}
	return max(1, capacity/(int64(c)-126))
}
