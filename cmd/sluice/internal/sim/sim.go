package sim

import (
	"math"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/cmd/sluice/internal/muldiv"
	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
	"github.com/sluicehq/sluice/cmd/sluice/internal/traffic"
)

// Start is the virtual clock's first instant unless Config.Origin says
// otherwise: 2025-01-01 00:00:00 UTC, a whole number of days after the Unix
// epoch, so that fixed windows of any length dividing a day (a second, a
// minute, an hour) begin at offset 0. Fixed windows are the library's own,
// aligned to the epoch: fixed:100/7s's begin wherever 7 s divides the Unix
// time, as they would in production.
var Start = traffic.DefaultOrigin

// Forever, as Config.MaxWait, lets callers wait as long as it takes, as
// actor.Limiter does by default.
const Forever time.Duration = -1

// Config is one limit and how to measure it.
type Config struct {
	Limit spec.Limit
	// MaxWait refuses, at once, a caller whose predicted grant is more than
	// MaxWait after its arrival (actor.WithMaxWait). 0: callers never wait;
	// Forever (any negative value): no limit.
	MaxWait time.Duration
	// Window is the length of the windows in which MaxInWindow is measured;
	// 0 skips the measure.
	Window time.Duration
	// Upstream, when set, replays every admission through the upstream's
	// own algorithm and counts those it would refuse.
	Upstream *spec.Limit
	// Bin is the width of the per-bin series; 0 keeps none; AutoBin
	// chooses it from the run's length.
	Bin time.Duration
	// Duration, when set, pads the series to cover [0, Duration) even when
	// the traffic ends before it. A stream that knows its length (Span)
	// when it ends sets it then.
	Duration time.Duration
	// Origin is the instant offset 0 stands for (zero: Start): a replay of
	// recorded instants keeps them, so that fixed windows fall where the
	// library's FixedWindow puts them on those instants.
	Origin time.Time
	// Horizon ends the run: no grant is made after it, and the waiters
	// still queued then are counted in Result.Stranded. 0 means ten times
	// the later of Duration and the last arrival, plus a minute, so that an
	// overload that would take centuries to drain ends in bounded time.
	Horizon time.Duration
	// StopOnExceed ends the run soon after the first admission the upstream
	// would refuse (the grants of that one wake-up complete), leaving the
	// result partial (Result.Stopped): for searches that only need to know
	// whether a limit ever exceeds the upstream.
	StopOnExceed bool
	// Retry makes refused callers retry (the zero Retry: never), drawing
	// their jitter from Seed.
	Retry Retry
	Seed  uint64
	// Record keeps every admission in Result.Grants (for tests).
	Record bool
}

// Grant is one admission.
type Grant struct {
	Arrival, At time.Duration // when it first arrived and when it was granted
	Cost        int64
}

// Result is what one limit did with the traffic. Counts are requests,
// Units are cost units.
type Result struct {
	Limit spec.Limit

	Offered, Admitted, Refused                int64
	OfferedUnits, AdmittedUnits, RefusedUnits int64
	// Waited counts admissions granted after a wait longer than zero.
	Waited int64
	// Stranded counts callers still waiting at the horizon: neither
	// admitted nor refused.
	Stranded, StrandedUnits int64
	// TooLarge counts refusals of a cost above the limit's capacity, which
	// no wait could admit (the real limiter fails them with
	// permits.ErrCostExceedsCapacity). They are in Refused too.
	TooLarge int64

	// P50, P99 and Max are the waits of admitted requests and of the
	// callers still waiting at the horizon, nearest rank, zero waits
	// included; Max is the longest granted wait. The stranded rank above
	// every granted wait: a percentile that falls among them has
	// P50Stranded or P99Stranded set, and no duration.
	P50, P99, Max            time.Duration
	P50Stranded, P99Stranded bool

	// MaxInWindow is the most units admitted in any half-open window of
	// length Window; MaxInWindowAt is the first admission in such a window.
	Window        time.Duration
	MaxInWindow   int64
	MaxInWindowAt time.Duration

	// Exceeded counts admissions the upstream's algorithm would refuse,
	// having taken every one before it that it allowed; FirstExceeded is the
	// instant of the first.
	Upstream      *spec.Limit
	Exceeded      int64
	FirstExceeded time.Duration

	// End is the instant of the last grant, which may be after the last
	// arrival while a queue drains.
	End time.Duration

	// Bin is the width of OfferedUnitsPerBin and AdmittedUnitsPerBin: bin
	// k holds the units offered (by arrival) and admitted (by grant) in
	// [k·Bin, (k+1)·Bin).
	Bin                                     time.Duration
	OfferedUnitsPerBin, AdmittedUnitsPerBin []int64
	// SeriesCut reports that series of a given width stop at MaxBins
	// bins, before the run did.
	SeriesCut bool
	// Duration is the run's length (Config.Duration, or the stream's).
	Duration time.Duration

	// Keys counts the keys a per-key limit kept a limit for, and
	// TopRefused its keys with the most refused requests (at most
	// TopKeys, the most first, ties by first arrival); both empty for a
	// limit over all keys.
	Keys       int
	TopRefused []KeyCount

	// Retries counts the attempts after the first (Config.Retry): Offered
	// + Retries attempts in all. A request is admitted when one of its
	// attempts is, and refused when its last one is; its wait counts from
	// its first attempt. PeakRetries is the most retries at one instant,
	// PeakRetriesAt the first such instant: the storm.
	Retries, PeakRetries int64
	PeakRetriesAt        time.Duration

	// Stopped reports a run ended early by Config.StopOnExceed; its
	// numbers cover only what came before.
	Stopped bool

	Grants []Grant // with Config.Record

	dist dist // the waits of admitted requests
}

// run is one limit's owner: the algorithm and its waiters, plus the
// measures.
//
// The waiters are reservations. The real owner queues a waiter and decides
// for it when it reaches the head of its FIFO, at its scheduled instant
// (scheduler.Queue.Grant); with WithMaxWait it also predicts, on a copy of
// the state, when that will be (actor/rate.go). With nothing that leaves a
// queue early (the simulator has no cancellations, refunds or changes of
// rate), both come to the same thing as deciding for each waiter once, on
// arrival, behind the waiters before it: the head's decisions are the same
// calls in the same order, at the same instants, and a grant comes at the
// instant it was reserved for. So the simulator decides on arrival and
// keeps the grant for its instant; TestMatchesActor holds it to the real
// limiter, grant for grant. The algorithm sees instants in order: a
// reservation is decided at or after the one before it, and an arrival is
// decided at its own instant only when no reservation lies after it.
//
// Memory is the reservations (the callers waiting), the window measure's
// admissions in one window, the series' bins and the wait distribution,
// all bounded whatever the run's length; arrivals are consumed as they
// come.
type run struct {
	cfg      Config
	clock    clock
	one      lane // the limit's FIFO; a per-key limit has keys instead
	keys     *keys
	retry    *retrier // nil when callers do not retry
	capacity int64
	maxWait  int64 // ns; < 0 none
	// pend holds the reservations not yet granted, in order of instant
	// (which is their order of arrival); pend[ph] is the next. A per-key
	// limit keeps them in keys.due instead.
	pend []reservation
	ph   int
	now  int64   // the instant of the batch of arrivals being decided
	up   judge   // nil without an upstream
	win  window  // the admissions in the last Window, for MaxInWindow
	bins *series // nil without series
	last int64   // the latest arrival
	res  *Result
}

// lane is one FIFO of waiters and the algorithm that decides for them: the
// limit's, or one key's of a per-key limit.
type lane struct {
	alg     algorithms.Algorithm
	waiting int   // reservations not yet granted
	last    int64 // the latest reservation's instant
}

// reservation is a waiter's grant, decided on arrival, due at at.
type reservation struct {
	arrival, at, cost int64 // arrival: the request's first attempt
	key               uint32
	tries             uint32 // retries before this attempt
}

// never is the instant of a waiter the algorithm would never admit (it
// names no instant to retry at), which the real queue would hold at its
// head for good: it strands everyone behind it.
const never = math.MaxInt64

func newRun(cfg Config) (*run, error) {
	alg, err := cfg.Limit.New()
	if err != nil {
		return nil, err
	}
	if cfg.Origin.IsZero() {
		cfg.Origin = Start
	}
	r := &run{
		cfg: cfg, clock: clock{cfg.Origin.UnixNano()}, one: lane{alg: alg}, capacity: alg.Capacity(), maxWait: int64(cfg.MaxWait),
		win: window{length: int64(cfg.Window)}, bins: newSeries(cfg.Bin, cfg.Duration), now: -1,
		res: &Result{Limit: cfg.Limit, Window: cfg.Window, Upstream: cfg.Upstream},
	}
	if r.maxWait < 0 {
		r.maxWait = -1
	}
	if cfg.Limit.PerKey {
		r.keys = &keys{limit: cfg.Limit}
	}
	r.retry = newRetrier(cfg.Retry, cfg.Seed)
	if cfg.Upstream != nil {
		if r.up, err = newJudge(*cfg.Upstream, r.clock); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// clock converts offsets on the timeline (ns after the origin) to instants
// and back. The conversions go through Unix nanoseconds because time.Unix
// and UnixNano cost a fraction of Time.Add and Time.Sub, and a simulated
// hour converts tens of millions of instants. The timeline spans the years
// 1678 to 2262, far beyond any run.
type clock struct{ origin int64 } // Unix ns

// t is the instant ns after the origin.
func (c clock) t(ns int64) time.Time { return time.Unix(0, c.origin+ns) }

// ns converts a decision's instant to the timeline; the zero Time (never)
// becomes 0, as in actor.
func (c clock) ns(at time.Time) int64 {
	if at.IsZero() {
		return 0
	}
	return at.UnixNano() - c.origin
}

// feed is the owner's loop on a perfect clock, one batch of arrivals (in
// order of instant) at a time: before the arrivals of each instant, the
// timer fires for every grant due at or before it; then they are decided.
func (r *run) feed(arrivals []traffic.Arrival) {
	for i := 0; i < len(arrivals) && !r.res.Stopped; i++ {
		a := &arrivals[i]
		now := int64(a.At)
		if r.retry != nil {
			r.retries(now)
		}
		if r.step(now); r.res.Stopped {
			return
		}
		r.res.Offered++
		r.res.OfferedUnits += a.Cost
		if r.bins != nil {
			r.bins.add(&r.bins.offered, now, a.Cost)
		}
		r.attempt(now, now, a.Cost, a.Key, 0)
	}
	if n := len(arrivals); n > 0 {
		r.last = max(r.last, int64(arrivals[n-1].At))
	}
}

// step moves the owner to instant now: the grants due at or before it
// first.
func (r *run) step(now int64) {
	if now != r.now {
		r.grant(now)
		r.now = now
	}
}

// drain makes the retries and grants the reservations up to the horizon
// once the arrivals have ended; d is the run's length. A retry due after
// the horizon is a caller still waiting, as a reservation is.
func (r *run) drain(d time.Duration) {
	r.cfg.Duration = max(r.cfg.Duration, d)
	horizon := int64(r.cfg.Horizon)
	if horizon <= 0 {
		horizon = muldiv.Add(muldiv.Mul(max(int64(r.cfg.Duration), r.last), 10), int64(time.Minute))
	}
	if r.retry != nil {
		r.retries(horizon)
		for _, q := range r.retry.due.h {
			r.res.Stranded++
			r.res.StrandedUnits += q.cost
		}
	}
	r.grant(horizon)
	for _, p := range r.pend[r.ph:] {
		r.res.Stranded++
		r.res.StrandedUnits += p.cost
	}
	if r.keys != nil {
		for _, q := range r.keys.due.h {
			r.res.Stranded++
			r.res.StrandedUnits += q.cost
		}
	}
}

// grant makes the grants due at or before until, in order. As the real
// owner's wake-ups do, it grants every reservation of one instant together
// and stops after the instant at which the upstream was first exceeded,
// with StopOnExceed.
func (r *run) grant(until int64) {
	if r.keys != nil {
		r.grantKeys(until)
		return
	}
	for r.ph < len(r.pend) && !r.res.Stopped {
		at := r.pend[r.ph].at
		if at > until {
			break
		}
		for ; r.ph < len(r.pend) && r.pend[r.ph].at == at; r.ph++ {
			p := r.pend[r.ph]
			r.admitted(p.arrival, p.at, p.cost)
		}
	}
	r.one.waiting = len(r.pend) - r.ph
	if r.ph == len(r.pend) {
		r.pend, r.ph = r.pend[:0], 0
	} else if r.ph > 4096 && r.ph > len(r.pend)/2 {
		r.pend, r.ph = r.pend[:copy(r.pend, r.pend[r.ph:])], 0
	}
}

// attempt is actor's runtime.admit for an Acquire with WithMaxWait(MaxWait)
// and no deadline, followed by the queue's decisions for it; for a
// per-key limit, keyed's for the arrival's key. first is the request's
// first attempt, from which its wait counts; tries, its retries so far.
func (r *run) attempt(now, first, cost int64, key uint32, tries uint32) {
	if cost > r.capacity {
		r.res.TooLarge++ // permanent: never retried
		r.refuse(cost, key)
		return
	}
	l := &r.one
	if r.keys != nil {
		l = r.keys.lane(key)
	}
	at := now
	if l.waiting > 0 {
		// Behind the reservations: from the last one's instant
		// (scheduler.Scheduled), which no grant can come before.
		at = max(l.last, now)
		switch {
		case r.maxWait >= 0 && at-now > r.maxWait:
			// Only behind a waiter that is never granted: any other was
			// reserved within the maximum wait of an earlier arrival. No
			// instant to name, so a retry falls back on its back-off.
			r.refused(now, first, cost, key, tries, 0)
			return
		case at == never:
			r.reserve(l, reservation{first, never, cost, key, tries})
			return
		}
	}
	for i := 0; ; i++ {
		ok, retry := decideOn(l.alg, r.clock, at, cost)
		switch {
		case ok && at == now:
			r.admitted(first, now, cost)
			return
		case ok:
			r.reserve(l, reservation{first, at, cost, key, tries})
			return
		case retry == 0 || i == 64:
			// scheduler.Predict's bound: an algorithm that keeps naming
			// instants it then refuses at waits for an event.
			r.reserve(l, reservation{first, never, cost, key, tries})
			return
		}
		at = max(retry, at+1)
		if r.maxWait >= 0 && at-now > r.maxWait {
			// Refused on the instant named (its RetryAfter): the decisions
			// that named it were denials, which took nothing.
			r.refused(now, first, cost, key, tries, at-now)
			return
		}
	}
}

// reserve queues p on lane l.
func (r *run) reserve(l *lane, p reservation) {
	l.waiting++
	l.last = p.at
	if r.keys != nil {
		r.keys.due.push(p)
		return
	}
	r.pend = append(r.pend, p)
}

func (r *run) refuse(cost int64, key uint32) {
	r.res.Refused++
	r.res.RefusedUnits += cost
	if r.keys != nil {
		r.keys.refused(key)
	}
}

func decideOn(a algorithms.Algorithm, c clock, at, cost int64) (bool, int64) {
	if g, ok := a.(lean); ok {
		ok, wait, open := g.TryAdmitAt(c.t(at), cost)
		if open {
			if ok {
				return true, 0
			}
			return false, at + int64(wait)
		}
	}
	d := a.AllowAt(c.t(at), cost)
	if d.Allowed {
		return true, 0
	}
	return false, c.ns(d.RetryAt)
}

// lean is the decision a limiter's fast path makes (algorithms.GCRA and the
// buckets, algorithms.FixedWindow): the same state machine as AllowAt
// without a receipt, Remaining or ResetAt, a third of the cost. The
// simulator never closes a gate, so it is always open.
type lean interface {
	TryAdmitAt(now time.Time, cost int64) (ok bool, wait time.Duration, open bool)
}

// admitted measures one admission: its wait, its bin, the window it falls
// in, and the upstream's verdict. Grants come in order of instant, since
// the queue is FIFO and an arrival is decided at once only when nobody
// waits.
func (r *run) admitted(arrival, at, cost int64) {
	res := r.res
	res.Admitted++
	res.AdmittedUnits += cost
	res.End = time.Duration(at)
	if w := at - arrival; w > 0 {
		res.Waited++
		res.Max = max(res.Max, time.Duration(w))
	}
	res.dist.add(at - arrival)
	if r.bins != nil {
		r.bins.add(&r.bins.admitted, at, cost)
	}
	if r.win.length > 0 {
		r.slide(at, cost)
	}
	if r.up != nil && !r.up.admit(at, cost) {
		if res.Exceeded == 0 {
			res.FirstExceeded = time.Duration(at)
		}
		res.Exceeded++
		res.Stopped = r.cfg.StopOnExceed
	}
	if r.cfg.Record {
		res.Grants = append(res.Grants, Grant{Arrival: time.Duration(arrival), At: time.Duration(at), Cost: cost})
	}
}

// slide adds an admission to the window ending at its instant, (at-Window,
// at], and keeps the largest total seen. Every half-open window of length
// Window that holds admissions holds no more than the one ending at its
// last.
func (r *run) slide(at, cost int64) {
	r.win.expire(at)
	r.win.add(at, cost)
	if r.win.sum > r.res.MaxInWindow {
		r.res.MaxInWindow, r.res.MaxInWindowAt = r.win.sum, time.Duration(r.win.oldest())
	}
}

// finish computes the percentiles and closes the series over span.
func (r *run) finish(span time.Duration) {
	res := r.res
	res.Duration = r.cfg.Duration
	res.percentiles()
	if r.keys != nil {
		res.Keys, res.TopRefused = r.keys.n, r.keys.top(TopKeys)
	}
	if r.retry != nil {
		res.PeakRetries, res.PeakRetriesAt = r.retry.peak, time.Duration(r.retry.peakAt)
	}
	if r.bins != nil {
		res.Bin, res.OfferedUnitsPerBin, res.AdmittedUnitsPerBin = r.bins.finish(max(span, r.cfg.Duration))
		res.SeriesCut = r.bins.cut
	}
	r.win, r.pend, r.bins, r.keys, r.retry = window{}, nil, nil, nil, nil
}
