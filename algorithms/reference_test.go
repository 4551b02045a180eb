package algorithms_test

import (
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
)

// This file holds the slow, obvious models the algorithms are checked
// against (by the property tests and the fuzz targets), and the checkers of
// the conformance bounds. Instants are nanoseconds since t0.

// t0 is the first instant of every timeline. It is a whole second (and a
// whole minute) after the Unix epoch, so FixedWindow's windows start at t0.
var t0 = time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)

// instant returns the instant n nanoseconds after t0.
func instant(n int64) time.Time { return t0.Add(time.Duration(n)) }

// admission is one admitted cost at its effective instant: the latest instant
// the algorithm had seen, since an earlier one counts as that.
type admission struct{ at, cost int64 }

// model is a reference implementation of one algorithm.
type model interface {
	// decide is the decision the algorithm must make at instant at.
	decide(at, cost int64) algorithms.Decision
	// bound checks the algorithm's conformance bound over every interval of
	// the admissions, returning a description of the first violation.
	bound(events []admission) error
}

// refBucket is the token bucket that GCRA(rate, b), TokenBucket(b, rate) and
// LeakyBucket(b, rate) all implement, written the obvious way with exact
// integers: it holds up to capacity tokens, gains Count/Per tokens per
// nanosecond, starts full, and admits a cost when it holds that many tokens.
// Tokens are counted in units of 1/Per token, so that they stay whole.
type refBucket struct {
	capacity int64
	rate     algorithms.Rate
	count    *big.Int // units gained per ns
	per      *big.Int // units in one token
	full     *big.Int // capacity·Per units
	units    *big.Int // tokens·Per at instant now
	now      int64
	started  bool
	x, y, z  big.Int // scratch
}

func newRefBucket(capacity int64, rate algorithms.Rate) *refBucket {
	r := &refBucket{
		capacity: capacity,
		rate:     rate,
		count:    big.NewInt(rate.Count),
		per:      big.NewInt(int64(rate.Per)),
	}
	r.full = new(big.Int).Mul(big.NewInt(capacity), r.per)
	r.units = new(big.Int).Set(r.full)
	return r
}

func (r *refBucket) decide(at, cost int64) algorithms.Decision {
	if r.started && at > r.now {
		r.units.Add(r.units, r.x.Mul(r.x.SetInt64(at-r.now), r.count))
		if r.units.Cmp(r.full) > 0 {
			r.units.Set(r.full)
		}
	}
	if !r.started || at > r.now {
		r.now, r.started = at, true
	}
	d := algorithms.Decision{}
	if cost >= 1 && cost <= r.capacity {
		need := r.y.Mul(r.y.SetInt64(cost), r.per)
		if r.units.Cmp(need) >= 0 {
			r.units.Sub(r.units, need)
			d.Allowed = true
		} else {
			// The first whole instant at which units + (t-now)·Count >= need.
			d.RetryAt = instant(r.now + r.ceilDiv(need.Sub(need, r.units), r.count))
		}
	}
	d.Remaining = r.z.Quo(r.units, r.per).Int64()
	d.ResetAt = instant(r.now + r.ceilDiv(r.y.Sub(r.full, r.units), r.count))
	return d
}

// ceilDiv returns a/b rounded up, for a >= 0 and b > 0.
func (r *refBucket) ceilDiv(a, b *big.Int) int64 {
	q, m := r.z.QuoRem(a, b, &r.x)
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

// bound checks that every closed interval [s, s+d] holds at most
// capacity + floor(Count·d/Per) admitted units.
//
// For admissions i <= j (in order, instants t_i <= t_j, prefix sums S) the
// interval [t_i, t_j] breaks the bound exactly when
//
//	S_j - S_{i-1} - b > floor(r·(t_j - t_i))  <=>  S_j - S_{i-1} - b > r·(t_j - t_i)
//
// (an integer exceeds floor(x) exactly when it exceeds x), that is when
// (S_j·Per - Count·t_j) - (S_{i-1}·Per - Count·t_i) > b·Per. Keeping the least
// second term seen so far checks every pair in one pass; every interval
// holds the most when its ends are admissions, so that is every interval.
// TestBucketBoundChecker compares it with the double loop.
func (r *refBucket) bound(events []admission) error {
	return bucketBound(r.capacity, r.rate, events)
}

func bucketBound(capacity int64, rate algorithms.Rate, events []admission) error {
	per, count := big.NewInt(int64(rate.Per)), big.NewInt(rate.Count)
	limit := new(big.Int).Mul(big.NewInt(capacity), per)
	sum := new(big.Int) // S_{j-1}, then S_j
	var least *big.Int
	leastAt := -1
	for j, e := range events {
		b := new(big.Int).Mul(sum, per) // S_{j-1}·Per - Count·t_j
		b.Sub(b, new(big.Int).Mul(count, big.NewInt(e.at)))
		if least == nil || b.Cmp(least) < 0 {
			least, leastAt = b, j
		}
		sum.Add(sum, big.NewInt(e.cost))
		a := new(big.Int).Mul(sum, per)
		a.Sub(a, new(big.Int).Mul(count, big.NewInt(e.at)))
		if a.Sub(a, least).Cmp(limit) > 0 {
			return fmt.Errorf("admissions %d..%d (instants %d..%d ns) exceed %d + floor(%v · %d ns)",
				leastAt, j, events[leastAt].at, e.at, capacity, rate, e.at-events[leastAt].at)
		}
	}
	return nil
}

// bucketBoundNaive is bucketBound as a double loop over every pair of
// admissions, for checking the checker.
func bucketBoundNaive(capacity int64, rate algorithms.Rate, events []admission) error {
	for i := range events {
		sum := new(big.Int)
		for j := i; j < len(events); j++ {
			sum.Add(sum, big.NewInt(events[j].cost))
			// Events at the same instant as i but before it are in the interval too.
			s := new(big.Int).Set(sum)
			for k := i - 1; k >= 0 && events[k].at == events[i].at; k-- {
				s.Add(s, big.NewInt(events[k].cost))
			}
			d := events[j].at - events[i].at
			allowed := new(big.Int).Quo(new(big.Int).Mul(big.NewInt(rate.Count), big.NewInt(d)), big.NewInt(int64(rate.Per)))
			allowed.Add(allowed, big.NewInt(capacity))
			if s.Cmp(allowed) > 0 {
				return fmt.Errorf("admissions %d..%d exceed the bound", i, j)
			}
		}
	}
	return nil
}

// refSliding is the sliding window kept the obvious way: every admission,
// and sums over them.
type refSliding struct {
	limit, window int64
	now           int64
	started       bool
	events        []admission
}

// usedAt sums the admissions in (t-window, now].
func (r *refSliding) usedAt(t int64) int64 {
	var used int64
	for i := len(r.events) - 1; i >= 0 && r.events[i].at > t-r.window; i-- {
		used += r.events[i].cost
	}
	return used
}

func (r *refSliding) decide(at, cost int64) algorithms.Decision {
	if !r.started || at > r.now {
		r.now, r.started = at, true
	}
	used := r.usedAt(r.now)
	d := algorithms.Decision{Remaining: r.limit - used}
	if cost >= 1 && cost <= r.limit && cost <= r.limit-used {
		r.events = append(r.events, admission{r.now, cost})
		d.Allowed, d.Remaining = true, r.limit-used-cost
	} else if cost >= 1 && cost <= r.limit {
		// Try every instant at which an admission leaves, earliest first.
		for i := range r.events {
			leave := r.events[i].at + r.window
			if leave <= r.now {
				continue
			}
			if r.usedAt(leave) <= r.limit-cost {
				d.RetryAt = instant(leave)
				break
			}
		}
	}
	d.ResetAt = instant(r.now)
	if n := len(r.events); n > 0 && r.events[n-1].at > r.now-r.window {
		d.ResetAt = instant(r.events[n-1].at + r.window)
	}
	return d
}

// bound checks that every half-open interval [s, s+window) holds at most
// limit units. The fullest such interval starts at an admission.
func (r *refSliding) bound(events []admission) error {
	return slidingBound(r.limit, r.window, events)
}

func slidingBound(limit, window int64, events []admission) error {
	for i := range events {
		if i > 0 && events[i-1].at == events[i].at {
			continue
		}
		var sum int64
		for j := i; j < len(events) && events[j].at < events[i].at+window; j++ {
			if events[j].cost > limit-sum {
				return fmt.Errorf("more than %d units in [%d, %d) ns", limit, events[i].at, events[i].at+window)
			}
			sum += events[j].cost
		}
	}
	return nil
}

// refFixed counts admissions per epoch-aligned window in a map.
type refFixed struct {
	limit, window int64
	now           int64 // Unix ns
	started       bool
	counts        map[int64]int64
}

func (r *refFixed) decide(at, cost int64) algorithms.Decision {
	unix := t0.UnixNano() + at
	if !r.started || unix > r.now {
		r.now, r.started = unix, true
	}
	if r.counts == nil {
		r.counts = map[int64]int64{}
	}
	index := r.now / r.window // instants are after the epoch
	used := r.counts[index]
	next := time.Unix(0, (index+1)*r.window)
	d := algorithms.Decision{Remaining: r.limit - used, ResetAt: next}
	switch {
	case cost < 1 || cost > r.limit:
		if used == 0 {
			d.ResetAt = time.Unix(0, r.now)
		}
	case cost <= r.limit-used:
		r.counts[index] += cost
		d.Allowed, d.Remaining = true, r.limit-used-cost
	default:
		d.RetryAt = next
	}
	return d
}

// bound checks that each epoch-aligned window holds at most limit units.
func (r *refFixed) bound(events []admission) error {
	return fixedBound(r.limit, r.window, events)
}

func fixedBound(limit, window int64, events []admission) error {
	sums := map[int64]int64{}
	for _, e := range events {
		k := (t0.UnixNano() + e.at) / window
		if e.cost > limit-sums[k] {
			return fmt.Errorf("more than %d units in window %d (starting %v)", limit, k, time.Unix(0, k*window).UTC())
		}
		sums[k] += e.cost
	}
	return nil
}

// sameDecision reports whether two decisions are equal, comparing instants
// with Equal.
func sameDecision(a, b algorithms.Decision) bool {
	return a.Allowed == b.Allowed && a.Remaining == b.Remaining &&
		a.RetryAt.Equal(b.RetryAt) && a.ResetAt.Equal(b.ResetAt)
}

func showDecision(d algorithms.Decision) string {
	show := func(x time.Time) string {
		if x.IsZero() {
			return "zero"
		}
		return fmt.Sprintf("t0%+dns", x.Sub(t0).Nanoseconds())
	}
	return fmt.Sprintf("{Allowed:%v RetryAt:%s Remaining:%d ResetAt:%s}", d.Allowed, show(d.RetryAt), d.Remaining, show(d.ResetAt))
}

// harness drives algorithms in lockstep with their model, and checks every
// decision, the exactness of every RetryAt, and the bound at the end.
type harness struct {
	t       testing.TB
	label   string // configuration and seed, printed on failure
	names   []string
	algs    []algorithms.Algorithm
	ref     model
	latest  int64
	started bool
	events  []admission
	steps   []stepRecord // the last few, for the failure message
	count   int
	// probe checks every denial's RetryAt on clones, and Remaining and
	// ResetAt on every probeEvery-th decision (every one when zero).
	probe      bool
	probeEvery int
	// also, when set, checks another form of the decision (GCRA's
	// TryAdmitAt) against the model's, at the latest instant.
	also func(latest, cost int64, want algorithms.Decision) error
}

type stepRecord struct {
	n, cost int64
	want    algorithms.Decision
}

func (h *harness) fail(format string, args ...any) {
	h.t.Helper()
	var tail []string
	for _, s := range h.steps {
		tail = append(tail, fmt.Sprintf("AllowAt(t0%+dns, %d) = %s", s.n, s.cost, showDecision(s.want)))
	}
	h.t.Fatalf("%s\n%s\nlast steps (of %d):\n  %s", h.label, fmt.Sprintf(format, args...), h.count, strings.Join(tail, "\n  "))
}

// step decides cost at instant n (ns since t0) with every algorithm and the
// model, and returns the model's decision.
func (h *harness) step(n, cost int64) algorithms.Decision {
	if !h.started || n > h.latest {
		h.latest, h.started = n, true
	}
	want := h.ref.decide(n, cost)
	if len(h.steps) == 12 {
		h.steps = append(h.steps[:0], h.steps[1:]...)
	}
	h.steps = append(h.steps, stepRecord{n, cost, want})
	h.count++
	if h.also != nil {
		if err := h.also(h.latest, cost, want); err != nil {
			h.fail("%v", err)
		}
	}
	for i, a := range h.algs {
		var before algorithms.Algorithm
		if h.probe {
			before = a.(algorithms.Cloner).Clone()
		}
		got := a.AllowAt(instant(n), cost)
		if !sameDecision(got, want) {
			h.fail("%s: AllowAt(t0%+dns, %d) = %s, want %s", h.names[i], n, cost, showDecision(got), showDecision(want))
		}
		if h.probe {
			h.probeDecision(h.names[i], before, n, cost, got)
		}
	}
	if want.Allowed {
		h.events = append(h.events, admission{h.latest, cost})
	}
	return want
}

// probeDecision checks, on clones of the state before a decision, that a
// denial's RetryAt is exact to the nanosecond, and on clones of the state
// after it that Remaining units and no more pass at the same instant and that
// the full capacity passes at ResetAt and not a nanosecond earlier.
func (h *harness) probeDecision(name string, before algorithms.Algorithm, n, cost int64, d algorithms.Decision) {
	capacity := before.Capacity()
	if !d.Allowed && !d.RetryAt.IsZero() && representable(d.RetryAt) {
		if got := clone(before).AllowAt(d.RetryAt, cost); !got.Allowed {
			h.fail("%s: AllowAt(t0%+dns, %d) said RetryAt %s, but it is denied there: %s",
				name, n, cost, showDecision(d), showDecision(got))
		}
		if got := clone(before).AllowAt(d.RetryAt.Add(-1), cost); got.Allowed {
			h.fail("%s: AllowAt(t0%+dns, %d) said RetryAt %s, but it is allowed a nanosecond earlier",
				name, n, cost, showDecision(d))
		}
	}
	if cost < 1 || cost > capacity {
		if d.Allowed || !d.RetryAt.IsZero() {
			h.fail("%s: cost %d (capacity %d) must be denied with zero RetryAt: %s", name, cost, capacity, showDecision(d))
		}
	}
	if h.probeEvery > 0 && h.count%h.probeEvery != 0 {
		return
	}
	// Remaining: exactly that many more units pass at this instant. Only for
	// small remainders, which keeps the probe cheap.
	if d.Remaining <= 64 {
		after := clone(before)
		after.AllowAt(instant(n), cost)
		got := int64(0)
		for after.AllowAt(instant(n), 1).Allowed {
			got++
		}
		if got != d.Remaining {
			h.fail("%s: Remaining %d after AllowAt(t0%+dns, %d), but %d units pass at that instant", name, d.Remaining, n, cost, got)
		}
	}
	// ResetAt: back to full capacity there, and not a nanosecond earlier
	// (unless that is before the latest instant seen).
	if !representable(d.ResetAt) {
		return
	}
	after := clone(before)
	after.AllowAt(instant(n), cost)
	if got := clone(after).AllowAt(d.ResetAt, capacity); !got.Allowed {
		h.fail("%s: ResetAt of %s, but the capacity %d is denied there", name, showDecision(d), capacity)
	}
	if earlier := d.ResetAt.Add(-1); earlier.Sub(t0).Nanoseconds() >= h.latest {
		if got := clone(after).AllowAt(earlier, capacity); got.Allowed {
			h.fail("%s: ResetAt of %s, but the capacity %d is allowed a nanosecond earlier", name, showDecision(d), capacity)
		}
	}
}

// finish checks the conformance bound over the admissions.
func (h *harness) finish() {
	h.t.Helper()
	if err := h.ref.bound(h.events); err != nil {
		h.fail("bound broken: %v", err)
	}
}

// representable reports whether x is an instant every algorithm tells apart
// from later ones in the timelines of these tests, which start near t0:
// less than 2^61ns (about 73 years) after the first instant, and before
// 2116 for FixedWindow. Beyond, instants are clamped and RetryAt or ResetAt
// cannot be probed.
func representable(x time.Time) bool { return x.Sub(t0) < 1<<61-1<<57 }

func clone(a algorithms.Algorithm) algorithms.Algorithm { return a.(algorithms.Cloner).Clone() }

// TestBucketBoundChecker checks the one-pass bound checker against the double
// loop, on random admissions that often break the bound.
func TestBucketBoundChecker(t *testing.T) {
	rng, _ := seeded(t.Name(), 1<<32)
	for run := 0; run < 2000; run++ {
		rate := algorithms.Rate{Count: 1 + rng.Int64N(5), Per: time.Duration(1 + rng.Int64N(20))}
		capacity := 1 + rng.Int64N(4)
		var events []admission
		var now int64
		for i := rng.IntN(12); i > 0; i-- {
			now += rng.Int64N(3) * rng.Int64N(10)
			events = append(events, admission{now, 1 + rng.Int64N(capacity)})
		}
		fast, naive := bucketBound(capacity, rate, events), bucketBoundNaive(capacity, rate, events)
		if (fast == nil) != (naive == nil) {
			t.Fatalf("capacity %d, rate %v, events %v: one pass says %v, double loop says %v", capacity, rate, events, fast, naive)
		}
	}
}

// TestReferenceModels pins the models themselves on hand-checked timelines,
// so that an agreement between model and algorithm means something.
func TestReferenceModels(t *testing.T) {
	second := int64(time.Second)
	t.Run("bucket 3/s", func(t *testing.T) {
		r := newRefBucket(2, algorithms.PerSecond(3)) // one unit per 333.333... ms
		for _, c := range []struct {
			at, cost int64
			want     algorithms.Decision
		}{
			{0, 2, algorithms.Decision{Allowed: true, Remaining: 0, ResetAt: instant(666_666_667)}},
			{0, 1, algorithms.Decision{RetryAt: instant(333_333_334), ResetAt: instant(666_666_667)}},
			{333_333_334, 1, algorithms.Decision{Allowed: true, ResetAt: instant(second)}},
			{second, 2, algorithms.Decision{Allowed: true, ResetAt: instant(second + 666_666_667)}},
			{second, 3, algorithms.Decision{ResetAt: instant(second + 666_666_667)}},
		} {
			if got := r.decide(c.at, c.cost); !sameDecision(got, c.want) {
				t.Fatalf("decide(%d, %d) = %s, want %s", c.at, c.cost, showDecision(got), showDecision(c.want))
			}
		}
	})
	t.Run("sliding", func(t *testing.T) {
		r := &refSliding{limit: 3, window: second}
		r.decide(0, 1)
		r.decide(100, 2)
		if got := r.decide(200, 2); got.Allowed || !got.RetryAt.Equal(instant(second+100)) {
			t.Fatalf("decide(200, 2) = %s, want RetryAt t0+1s+100ns", showDecision(got))
		}
		if got := r.decide(second, 1); !got.Allowed || got.Remaining != 0 {
			t.Fatalf("decide(1s, 1) = %s, want allowed as the first unit left", showDecision(got))
		}
	})
	t.Run("fixed", func(t *testing.T) {
		r := &refFixed{limit: 2, window: second}
		r.decide(second-1, 2)
		if got := r.decide(second-1, 1); got.Allowed || !got.RetryAt.Equal(instant(second)) {
			t.Fatalf("decide(1s-1ns, 1) = %s, want RetryAt t0+1s", showDecision(got))
		}
		if got := r.decide(second, 2); !got.Allowed {
			t.Fatalf("decide(1s, 2) = %s, want allowed in the next window", showDecision(got))
		}
	})
	t.Run("bounds", func(t *testing.T) {
		burst := []admission{{0, 2}, {second / 3, 1}}
		if err := bucketBound(2, algorithms.PerSecond(3), burst); err == nil {
			t.Fatal("3 units within 333.33ms at 3/s with capacity 2 must break the bound")
		}
		if err := bucketBound(2, algorithms.PerSecond(3), []admission{{0, 2}, {second/3 + 1, 1}}); err != nil {
			t.Fatal(err)
		}
		if err := slidingBound(2, second, []admission{{0, 1}, {second - 1, 2}}); err == nil {
			t.Fatal("3 units within [0, 1s) must break a sliding window of 2")
		}
		if err := slidingBound(2, second, []admission{{0, 1}, {second - 1, 1}, {second, 1}}); err != nil {
			t.Fatal(err)
		}
		if err := fixedBound(2, second, []admission{{second - 1, 2}, {second, 2}}); err != nil {
			t.Fatal(err)
		}
		if err := fixedBound(2, second, []admission{{0, 1}, {second - 1, 2}}); err == nil {
			t.Fatal("3 units in one window must break a fixed window of 2")
		}
	})
}
