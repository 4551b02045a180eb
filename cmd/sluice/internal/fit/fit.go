package fit

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/cmd/sluice/internal/human"
	"github.com/sluicehq/sluice/cmd/sluice/internal/muldiv"
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
	Retry    sim.Retry     // how refused callers retry (zero: never)
	Seed     uint64        // the retries' jitter
	// Headroom is the share of the upstream, in percent, left unused
	// against what the simulation cannot see (network jitter bunching
	// requests, clocks, other clients): candidates are held to the upstream
	// scaled down by it (Judged). 0 holds them to the upstream itself.
	Headroom int64
}

// Judged is the upstream candidates are held to: its count (and size, for
// a paced upstream) scaled down by the headroom, at least 1.
func (g Goal) Judged() spec.Limit {
	up := g.Upstream
	if g.Headroom <= 0 {
		return up
	}
	scale := func(n int64) int64 { return max(1, muldiv.Floor(n, 100-min(g.Headroom, 99), 100)) }
	up.Rate.Count = scale(up.Rate.Count)
	if up.Kind.Paced() {
		up.Size = scale(up.Size)
	}
	return up
}

// Fractions are the shares of the upstream's rate tried first for the
// paced algorithms, in percent; Refine then tries shares around the best
// of them, down to steps of 1%.
var Fractions = []int64{100, 95, 90, 80, 70, 60, 50}

// Refine are the steps, in percent, of the search around the best share.
var Refine = []int64{4, 2, 1}

// Divisions are the fractions of the upstream's period tried as windows,
// where they are whole nanoseconds of at least 1 ms.
var Divisions = []int64{1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20}

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
	// refused requests outright.
	Tried, Exceeding, Missing int
	// Closest are the configurations that came nearest to the goal
	// without meeting it, nearest first, when there is no Pick.
	Closest []Miss
}

// Miss is a configuration that did not meet the goal and by how much.
type Miss struct {
	Limit spec.Limit
	// Run is the configuration's full run when it stayed within the
	// upstream, nil when even its smallest size exceeded it (Exceeded at).
	Run *sim.Result
	// Over is how far its p99 wait is over the goal; Exceeded, the
	// instant it first exceeded the upstream.
	Over, Exceeded time.Duration
	// Note, when set, says why instead (no size of it can work).
	Note string
}

// Why says what the configuration misses by.
func (m Miss) Why(goal Goal) string {
	switch {
	case m.Note != "":
		return m.Note
	case m.Run == nil:
		return "exceeds the upstream from " + human.Duration(m.Exceeded) + " even at its smallest size"
	case m.Run.P99Stranded || m.Run.Stranded > 0:
		return fmt.Sprintf("leaves %d callers waiting at the end", m.Run.Stranded)
	case m.Run.TooLarge > 0:
		return fmt.Sprintf("refuses %d requests too large for it", m.Run.TooLarge)
	case m.Run.Admitted == 0:
		return "admits nothing"
	}
	return fmt.Sprintf("p99 wait %s, %s over the goal", human.Duration(m.Run.P99), human.Duration(m.Over))
}

// nearer orders misses: within the upstream before exceeding it, then the
// smaller p99 excess, then more admitted.
func nearer(a, b Miss) bool {
	switch {
	case (a.Run == nil) != (b.Run == nil):
		return a.Run != nil
	case a.Run == nil:
		return a.Exceeded > b.Exceeded && a.Note == ""
	case a.Over != b.Over:
		return a.Over < b.Over
	}
	return a.Run.AdmittedUnits > b.Run.AdmittedUnits
}

// Traffic is what a search replays, once per candidate.
type Traffic struct {
	// Open returns a fresh stream of the same arrivals at every call; the
	// search calls it from several goroutines at once.
	Open func() (traffic.Stream, error)
	// MaxCost is the largest cost among them.
	MaxCost int64
}

// InMemory is the Traffic of arrivals held in memory (sorted by instant).
func InMemory(arrivals []traffic.Arrival) Traffic {
	var largest int64 = 1
	for _, a := range arrivals {
		largest = max(largest, a.Cost)
	}
	return Traffic{Open: func() (traffic.Stream, error) { return traffic.Slice(arrivals), nil }, MaxCost: largest}
}

// Search finds the best configuration of each kind for the traffic.
// Sizes (bursts, capacities, window limits) start at the largest cost in
// the traffic: a smaller one refuses those requests outright, which no
// wait cures. Memory is what one candidate's run holds, times the
// candidates run side by side (at most GOMAXPROCS), and what the
// traffic's Open holds.
func Search(tr Traffic, goal Goal, kinds []spec.Kind) ([]Best, error) {
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
	if tr.Open == nil {
		tr = InMemory(nil)
	}
	s := &search{traffic: tr, goal: goal, judged: goal.Judged(), lo: max(tr.MaxCost, 1)}
	out := make([]Best, 0, len(unique))
	for _, k := range unique {
		b, err := s.kind(k)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

type search struct {
	traffic Traffic
	goal    Goal
	judged  spec.Limit // the upstream with the headroom taken off
	lo      int64      // the smallest size worth trying: the largest cost
}

// kind searches one algorithm: its coarse lines side by side, then, for
// the paced ones, shares around the best.
func (s *search) kind(k spec.Kind) (Best, error) {
	lines, err := s.linesFor(k)
	if err != nil {
		return Best{}, err
	}
	s.runLines(lines)
	if k.Paced() {
		lines = s.refine(k, lines)
	}
	b := Best{Kind: k}
	for _, l := range lines {
		if l.err != nil {
			return Best{}, l.err
		}
		b.Tried += l.tried
		b.Exceeding += l.exceeding
		b.Missing += l.missing
		if l.pick != nil && (b.Pick == nil || better(l.pick, b.Pick)) {
			b.Pick = l.pick
		}
		if l.miss != nil {
			b.Closest = append(b.Closest, *l.miss)
		}
	}
	if b.Pick != nil {
		b.AnyTraffic = Guaranteed(b.Pick.Limit, s.judged)
		b.Closest = nil
	}
	slices.SortStableFunc(b.Closest, func(x, y Miss) int {
		if nearer(x, y) {
			return -1
		}
		if nearer(y, x) {
			return 1
		}
		return 0
	})
	return b, nil
}

// refine tries shares of the upstream's rate around the best line's, in
// steps of Refine, keeping the better each time.
func (s *search) refine(k spec.Kind, lines []*line) []*line {
	best := bestLine(lines)
	if best == nil {
		return lines
	}
	tried := map[int64]bool{}
	for _, l := range lines {
		tried[l.pct] = true
	}
	for _, step := range Refine {
		var next []*line
		for _, pct := range []int64{best.pct - step, best.pct + step} {
			if pct < Fractions[len(Fractions)-1] || pct > 100 || tried[pct] {
				continue
			}
			tried[pct] = true
			if l := s.pacedLine(k, pct); l != nil && !sameRate(lines, l) {
				next = append(next, l)
			}
		}
		s.runLines(next)
		lines = append(lines, next...)
		if b := bestLine(lines); b != nil {
			best = b
		}
	}
	return lines
}

// sameRate reports a line of l's rate among lines: shares that round to
// one rate are searched once.
func sameRate(lines []*line, l *line) bool {
	for _, x := range lines {
		if x.rate == l.rate {
			return true
		}
	}
	return false
}

func bestLine(lines []*line) *line {
	var best *line
	for _, l := range lines {
		if l.pick != nil && (best == nil || better(l.pick, best.pick)) {
			best = l
		}
	}
	return best
}

func (s *search) runLines(lines []*line) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	for _, l := range lines {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			l.search(s)
		})
	}
	wg.Wait()
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

// Closest returns each kind's configuration nearest the goal, nearest
// first.
func Closest(bests []Best) []Miss {
	var all []Miss
	for _, b := range bests {
		if len(b.Closest) > 0 {
			all = append(all, b.Closest[0])
		}
	}
	slices.SortStableFunc(all, func(x, y Miss) int {
		if nearer(x, y) {
			return -1
		}
		if nearer(y, x) {
			return 1
		}
		return 0
	})
	return all
}

// line is one search along the size axis: a kind and a rate (paced) or a
// window (sliding, fixed), the size to be found in [lo, hi].
type line struct {
	kind   spec.Kind
	rate   algorithms.Rate // paced: the rate; windows: Count is ignored, Per the window
	pct    int64           // paced: the share of the upstream's rate
	lo, hi int64
	// results
	pick                      *sim.Result
	miss                      *Miss
	tried, exceeding, missing int
	err                       error
}

// linesFor returns the first searches for kind k.
func (s *search) linesFor(k spec.Kind) ([]*line, error) {
	var out []*line
	switch {
	case k.Paced():
		for _, pct := range Fractions {
			if l := s.pacedLine(k, pct); l != nil {
				out = append(out, l)
			}
		}
	case k == spec.Sliding || k == spec.Fixed:
		up := s.judged
		for _, div := range Divisions {
			w := up.Rate.Per / time.Duration(div)
			if w*time.Duration(div) != up.Rate.Per || (div > 1 && w < time.Millisecond) {
				continue
			}
			out = append(out, &line{kind: k, rate: algorithms.Rate{Per: w}, lo: s.lo, hi: up.Capacity()})
		}
	default:
		return nil, fmt.Errorf("fit: unknown kind %q", k)
	}
	return out, nil
}

// pacedLine is the line at pct percent of the judged upstream's rate, or
// nil when that rate cannot be written.
func (s *search) pacedLine(k spec.Kind, pct int64) *line {
	up := s.judged
	r := up.Rate
	if pct != 100 {
		if up.Rate.Count > (1<<62)/100 || up.Rate.Per > (1<<62)/100 {
			return nil // too large to scale: the full rate only
		}
		r = reduce(algorithms.Rate{Count: up.Rate.Count * pct, Per: up.Rate.Per * 100})
	}
	return &line{kind: k, rate: r, pct: pct, lo: s.lo, hi: up.Capacity()}
}

func (l *line) limit(size int64) spec.Limit {
	if l.kind.Paced() {
		return spec.Limit{Kind: l.kind, Rate: l.rate, Size: size}
	}
	return spec.Limit{Kind: l.kind, Rate: algorithms.Rate{Count: size, Per: l.rate.Per}}
}

// search finds the largest size in [lo, hi] that stays within the
// upstream, then measures it in full against the goal.
func (l *line) search(s *search) {
	if l.lo > l.hi {
		l.miss = &Miss{Limit: l.limit(l.hi), Note: fmt.Sprintf("the upstream's capacity (%d, headroom taken) is below the largest cost (%d)", l.hi, l.lo)}
		return // the upstream admits no request of the largest cost at once
	}
	var firstExceeded time.Duration
	exceeds := func(size int64) bool {
		res, err := l.run(s, size, true)
		if err != nil {
			l.err = err
			return true
		}
		l.tried++
		if res.Exceeded > 0 {
			l.exceeding++
			if size == l.lo {
				firstExceeded = res.FirstExceeded
			}
			return true
		}
		return false
	}
	// The largest size in [lo, hi] that does not exceed: sort.Search finds
	// the smallest that does.
	n := int(min(l.hi-l.lo+1, 1<<40))
	first := l.lo + int64(sort.Search(n, func(i int) bool { return exceeds(l.lo + int64(i)) }))
	if l.err != nil {
		return
	}
	if first == l.lo {
		l.miss = &Miss{Limit: l.limit(l.lo), Exceeded: firstExceeded}
		return // even the smallest size exceeds
	}
	res, err := l.run(s, first-1, false)
	if err != nil {
		l.err = err
		return
	}
	if res.P99Stranded || res.P99 > s.goal.P99 || res.Stranded > 0 || res.Admitted == 0 || res.TooLarge > 0 {
		l.missing++
		l.miss = &Miss{Limit: res.Limit, Run: res, Over: max(res.P99-s.goal.P99, 0)}
		return
	}
	l.pick = res
}

func (l *line) run(s *search, size int64, quick bool) (*sim.Result, error) {
	lim := l.limit(size)
	if _, err := lim.New(); err != nil {
		return nil, fmt.Errorf("fit: %v: %w", lim, err)
	}
	up := s.judged
	cfg := sim.Config{Limit: lim, MaxWait: s.goal.MaxWait, Upstream: &up, StopOnExceed: quick, Duration: s.goal.Duration, Origin: s.goal.Origin,
		Retry: s.goal.Retry, Seed: s.goal.Seed}
	if !quick {
		cfg.Window, cfg.Bin = up.Rate.Per, sim.AutoBin
	}
	src, err := s.traffic.Open()
	if err != nil {
		return nil, err
	}
	if c, ok := src.(io.Closer); ok {
		defer c.Close() // a quick run stops before the stream's end
	}
	res, err := sim.RunStream(src, []sim.Config{cfg})
	if err != nil {
		return nil, err
	}
	return res[0], nil
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

// reduce writes r in the plainest period in which it keeps three
// significant digits: per second, minute or hour, rounded down so that it
// never exceeds r ("1377/m" rather than "82656/h" or "2296/100s"); else in
// lowest terms.
func reduce(r algorithms.Rate) algorithms.Rate {
	for _, per := range []time.Duration{time.Second, time.Minute, time.Hour} {
		if n := muldiv.Floor(r.Count, int64(per), int64(r.Per)); n >= 100 || per == time.Hour && n >= 1 {
			if exact := muldiv.Floor(n, int64(r.Per), int64(per)); exact == r.Count && n*int64(r.Per) == r.Count*int64(per) || n >= 100 {
				return algorithms.Rate{Count: n, Per: per}
			}
		}
	}
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
