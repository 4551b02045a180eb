package fit

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/cmd/sluice/internal/sim"
	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
	"github.com/sluicehq/sluice/cmd/sluice/internal/traffic"
)

// Goal is what a configuration must meet.
type Goal struct {
	Upstream spec.Limit    // never to be exceeded
	P99      time.Duration // the admitted requests' p99 wait, at most
	MaxWait  time.Duration // the callers' maximum wait (sim.Forever: none)
	Duration time.Duration // of the traffic
	Origin   time.Time     // the instant offset 0 stands for (zero: sim.Start)
}

// Fractions are the shares of the upstream's rate tried for the paced
// algorithms, in percent.
var Fractions = []int64{100, 95, 90, 80, 70, 60, 50}

// Divisions are the fractions of the upstream's period tried as windows
// (W, W/2, W/4, W/10), where they are whole nanoseconds of at least 1 ms.
var Divisions = []int64{1, 2, 4, 10}

// Best is the outcome of the search for one algorithm.
type Best struct {
	Kind spec.Kind
	// Pick is the best configuration's full run, or nil when none met the
	// goal.
	Pick *sim.Result
	// AnyTraffic reports that Pick stays within the upstream whatever the
	// traffic, by the algorithms' own bounds; false means only this
	// traffic was shown to stay within it.
	AnyTraffic bool
	// Tried counts the configurations simulated; Exceeding those the
	// upstream would have refused, Missing those within it whose p99 wait
	// missed the goal, that left callers waiting at the horizon, or that
	// admitted nothing at all.
	Tried, Exceeding, Missing int
}

// Search finds the best configuration of each kind for the arrivals.
func Search(arrivals []traffic.Arrival, goal Goal, kinds []spec.Kind) ([]Best, error) {
	if err := goal.Upstream.Rate.Validate(); err != nil {
		return nil, fmt.Errorf("fit: upstream: %w", err)
	}
	if goal.P99 < 0 {
		return nil, errors.New("fit: the p99 goal is negative")
	}
	var unique []spec.Kind // a kind named twice is searched once
	for _, k := range kinds {
		if !slices.Contains(unique, k) {
			unique = append(unique, k)
		}
	}
	kinds = unique
	var lines []*line
	for _, k := range kinds {
		ls, err := linesFor(k, goal.Upstream)
		if err != nil {
			return nil, err
		}
		lines = append(lines, ls...)
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	for _, l := range lines {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			l.search(arrivals, goal)
		})
	}
	wg.Wait()
	out := make([]Best, 0, len(kinds))
	for _, k := range kinds {
		b := Best{Kind: k}
		for _, l := range lines {
			if l.kind != k {
				continue
			}
			if l.err != nil {
				return nil, l.err
			}
			b.Tried += l.tried
			b.Exceeding += l.exceeding
			b.Missing += l.missing
			if l.pick != nil && (b.Pick == nil || better(l.pick, b.Pick)) {
				b.Pick = l.pick
			}
		}
		if b.Pick != nil {
			b.AnyTraffic = Guaranteed(b.Pick.Limit, goal.Upstream)
		}
		out = append(out, b)
	}
	return out, nil
}

// better orders configurations that meet the goal: more units admitted,
// then a shorter p99 wait, then a shorter longest wait. Ties keep the one
// found first (the higher rate, the longer window).
func better(a, b *sim.Result) bool {
	switch {
	case a.AdmittedUnits != b.AdmittedUnits:
		return a.AdmittedUnits > b.AdmittedUnits
	case a.P99 != b.P99:
		return a.P99 < b.P99
	}
	return a.Max < b.Max
}

// Overall returns the best pick of all, or nil.
func Overall(bests []Best) *sim.Result {
	var top *sim.Result
	for _, b := range bests {
		if b.Pick != nil && (top == nil || better(b.Pick, top)) {
			top = b.Pick
		}
	}
	return top
}

// line is one search along the size axis: a kind and a rate (paced) or a
// window (sliding, fixed), the size to be found in [1, hi].
type line struct {
	kind spec.Kind
	rate algorithms.Rate // paced: the rate; windows: Count is ignored, Per the window
	hi   int64
	// results
	pick                      *sim.Result
	tried, exceeding, missing int
	err                       error
}

// linesFor returns the searches for kind k against the upstream up.
func linesFor(k spec.Kind, up spec.Limit) ([]*line, error) {
	hi := up.Capacity()
	var out []*line
	switch {
	case k.Paced():
		for _, pct := range Fractions {
			r := up.Rate
			if pct != 100 {
				if up.Rate.Count > (1<<62)/100 || up.Rate.Per > (1<<62)/100 {
					continue // too large to scale: the full rate only
				}
				r = reduce(algorithms.Rate{Count: up.Rate.Count * pct, Per: up.Rate.Per * 100})
			}
			out = append(out, &line{kind: k, rate: r, hi: hi})
		}
	case k == spec.Sliding || k == spec.Fixed:
		for _, div := range Divisions {
			w := up.Rate.Per / time.Duration(div)
			if w*time.Duration(div) != up.Rate.Per || (div > 1 && w < time.Millisecond) {
				continue
			}
			out = append(out, &line{kind: k, rate: algorithms.Rate{Per: w}, hi: hi})
		}
	default:
		return nil, fmt.Errorf("fit: unknown kind %q", k)
	}
	return out, nil
}

func (l *line) limit(size int64) spec.Limit {
	if l.kind.Paced() {
		return spec.Limit{Kind: l.kind, Rate: l.rate, Size: size}
	}
	return spec.Limit{Kind: l.kind, Rate: algorithms.Rate{Count: size, Per: l.rate.Per}}
}

// search finds the largest size that stays within the upstream, then
// measures it in full against the goal.
func (l *line) search(arrivals []traffic.Arrival, goal Goal) {
	exceeds := func(size int64) bool {
		res, err := l.run(arrivals, goal, size, true)
		if err != nil {
			l.err = err
			return true
		}
		l.tried++
		if res.Exceeded > 0 {
			l.exceeding++
			return true
		}
		return false
	}
	// The largest size in [1, hi] that does not exceed: sort.Search finds
	// the smallest that does.
	first := int64(sort.Search(int(min(l.hi, 1<<40)), func(i int) bool { return exceeds(int64(i) + 1) })) + 1
	if first == 1 || l.err != nil {
		return // even a size of 1 exceeds
	}
	res, err := l.run(arrivals, goal, first-1, false)
	if err != nil {
		l.err = err
		return
	}
	if res.P99 > goal.P99 || res.Stranded > 0 || res.Admitted == 0 {
		l.missing++
		return
	}
	l.pick = res
}

func (l *line) run(arrivals []traffic.Arrival, goal Goal, size int64, quick bool) (*sim.Result, error) {
	lim := l.limit(size)
	if _, err := lim.New(); err != nil {
		return nil, fmt.Errorf("fit: %v: %w", lim, err)
	}
	up := goal.Upstream
	cfg := sim.Config{Limit: lim, MaxWait: goal.MaxWait, Upstream: &up, StopOnExceed: quick, Duration: goal.Duration, Origin: goal.Origin}
	if !quick {
		cfg.Window, cfg.Bin = goal.Upstream.Rate.Per, time.Second
	}
	return sim.Run(arrivals, cfg)
}

// Guaranteed reports whether limit stays within upstream for any traffic,
// by the algorithms' own bounds: against a window upstream of N per W, when
// limit admits at most N in any window of length W; against a paced
// upstream of rate r and size b, when limit is paced too, with a rate and a
// size no larger. Anything else is not claimed.
func Guaranteed(limit, upstream spec.Limit) bool {
	if !upstream.Kind.Paced() {
		return limit.Bound(upstream.Rate.Per) <= upstream.Rate.Count
	}
	if !limit.Kind.Paced() {
		return false
	}
	// r <= r' as Count/Per <= Count'/Per', crossed in 128 bits.
	return limit.Size <= upstream.Size && !less(upstream.Rate, limit.Rate)
}

// less reports a < b as rates.
func less(a, b algorithms.Rate) bool {
	return cmp128(a.Count, int64(b.Per), b.Count, int64(a.Per)) < 0
}

// reduce writes r in the plainest period that keeps its count whole: per
// second, minute or hour ("19/s" rather than "1900/100s"), else in lowest
// terms.
func reduce(r algorithms.Rate) algorithms.Rate {
	for _, per := range []time.Duration{time.Second, time.Minute, time.Hour} {
		if hi, lo := bits.Mul64(uint64(r.Count), uint64(per)); hi == 0 && lo%uint64(r.Per) == 0 && lo/uint64(r.Per) <= 1<<62 {
			return algorithms.Rate{Count: int64(lo / uint64(r.Per)), Per: per}
		}
	}
	g := gcd(r.Count, int64(r.Per))
	return algorithms.Rate{Count: r.Count / g, Per: r.Per / time.Duration(g)}
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// cmp128 compares a·b with c·d, all non-negative.
func cmp128(a, b, c, d int64) int {
	h1, l1 := bits.Mul64(uint64(a), uint64(b))
	h2, l2 := bits.Mul64(uint64(c), uint64(d))
	switch {
	case h1 != h2:
		if h1 < h2 {
			return -1
		}
		return 1
	case l1 != l2:
		if l1 < l2 {
			return -1
		}
		return 1
	}
	return 0
}
