package permits

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/probe"
)

// Grant is a permit from a Refunder together with what the limiter needs to
// take it back: the instant it was granted at, on the limiter's clock,
// whether it came after waiting in the limiter's queue, and the limiter's
// own record of it (its ticket). It is a value, like Permit, and making one
// allocates nothing. Only the limiter that made a Grant can refund it, and
// only once.
type Grant struct {
	Permit
	// At is the instant the limiter granted at. For a grant that waited it
	// is the grant's scheduled instant, which may be slightly earlier than
	// the moment Acquire returned.
	At time.Time
	// Waited reports that the request queued behind others or for
	// capacity, rather than being granted on arrival.
	Waited bool

	ticket ticket
}

// ticket is a limiter's record of a grant, opaque to everyone else.
type ticket struct {
	issuer    any
	mark      time.Time
	frac, seq int64
}

// NewGrant returns a Grant of p made at the instant at by issuer, which
// keeps its own record of it in mark, frac and seq (a rate algorithm's
// receipt, say). A limiter that implements Refunder makes its grants with
// it and reads the record back with Ticket.
func NewGrant(p Permit, at time.Time, waited bool, issuer any, mark time.Time, frac, seq int64) Grant {
	return Grant{Permit: p, At: at, Waited: waited, ticket: ticket{issuer: issuer, mark: mark, frac: frac, seq: seq}}
}

// Ticket returns the record NewGrant kept, and ok true, when issuer made
// g; for a Grant from another limiter, or the zero Grant, ok is false.
func (g Grant) Ticket(issuer any) (mark time.Time, frac, seq int64, ok bool) {
	if g.ticket.issuer == nil || g.ticket.issuer != issuer {
		return time.Time{}, 0, 0, false
	}
	return g.ticket.mark, g.ticket.frac, g.ticket.seq, true
}

// Refunder is implemented by rate limiters that can take back a grant that
// was never used (actor.Limiter does, for every algorithm of package
// algorithms). A rate permit's Release does nothing, since rate capacity
// comes back with time; Refund is different: it says "this grant was not
// used after all", and the limiter gives the capacity back as far as its
// algorithm allows. All uses it so that a failed combined acquisition
// leaves nothing consumed.
type Refunder interface {
	Limiter
	// AcquireGrant is Acquire, returning the permit as a Grant.
	AcquireGrant(ctx context.Context, cost int64) (Grant, error)
	// TryAcquireGrant is TryAcquire, returning the permit as a Grant.
	TryAcquireGrant(cost int64) (Grant, error)
	// Refund gives back what is left of g's capacity, for a grant whose
	// permit was not used: never more than the admissions after it have
	// left unused, so that a refund never lets the limiter admit beyond its
	// bound. It reports whether anything came back. A second refund of one
	// grant, or a grant from another limiter, changes nothing.
	Refund(g Grant) bool
}

// All returns a Limiter that admits a request only when every one of
// limiters does, and holds all of their permits together: a request rate, a
// tokens-per-minute rate and a concurrency pool for one API, say. Its
// permit's Release releases every part; its Cost is the cost asked for.
// Each limiter is asked for that cost, unless it is wrapped in FixedCost.
//
// Admission is all or nothing. When it fails (the context ends, a deadline
// comes before a predicted grant, a part refuses or is closed), every
// permit already taken is given back before Acquire returns: released, for
// concurrency limiters such as actor.Pool, and refunded, for rate limiters
// that implement Refunder. A limiter that can do neither (a rate limiter
// from elsewhere) keeps what it granted; give All only limiters of sluice,
// or of your own that release or refund, if that matters.
//
// Requests are admitted one at a time, in the order they called Acquire (a
// FIFO hand-off, whose waiters are served in order): a request that came
// later never gets its parts first. Stages taken one after the other by
// concurrent requests would not keep that order: two requests that one
// pool grants in order, in one batch, are woken in an order the Go
// scheduler chooses, and could reach the rates the other way round. Within
// a request the order matters too, and All chooses it. First the limiters
// that are not Refunders (pools), in the order given, so that no rate
// capacity is spent while a request waits for a slot. Then the rate
// limiters, taken together at one instant and followed at once by the
// call: All tries each rate without waiting, and when one would make the
// request wait it gives back the rate grants it took a moment ago, waits on
// that rate alone, and tries the others again. A rate grant taken before
// waiting on another rate would be spent early, and a burst of such stale
// grants could exceed the quota the rates describe; a refund made at once
// gives the whole grant back, where one made after the wait could give back
// only what no later admission had used (Refunder). After four rounds All
// waits on each rate it still lacks and keeps what it holds.
//
// TryAcquire takes every part without waiting, in the same order, and gives
// everything back on the first refusal, which it returns. It fails while
// another request is being admitted.
//
// The combined permit's record (a token and the parts' permits) is
// recycled when the permit is released, so Acquire and TryAcquire allocate
// nothing beyond what the parts do; a combined permit that is never
// released costs one allocation of its record. Release it, as Do does.
//
// All flattens limiters made by All. It is safe for concurrent use when
// the limiters are.
func All(limiters ...Limiter) Limiter {
	a := &all{}
	for _, l := range limiters {
		a.add(l, nil)
	}
	for i, p := range a.parts {
		if p.ref != nil {
			a.rates = append(a.rates, i)
		} else {
			a.holds = append(a.holds, i)
		}
	}
	if len(a.parts) > 1 {
		a.turn = make(chan struct{}, 1)
	}
	n := len(a.parts)
	a.records.New = func() any {
		r := &record{owner: a, got: make([]Grant, n), taken: make([]bool, n)}
		r.tok.Value = r
		return r
	}
	return a
}

type all struct {
	parts   []part
	holds   []int         // parts released on failure, taken first
	rates   []int         // Refunders, taken together
	turn    chan struct{} // the FIFO hand-off between requests; nil with one part
	records sync.Pool     // *record
}

type part struct {
	lim   Limiter
	ref   Refunder // lim as a Refunder, or nil
	fixed *int64   // ask this much whatever the cost (FixedCost), or nil
	probe bool     // ref answers a probe (internal/probe): its refusal is not counted
}

// probing is the context of All's probes: one for all, made once, since a
// probe never waits and so needs nothing of its caller's context.
var probing = probe.Context(context.Background())

// try asks p for a grant without waiting, on All's own behalf: as a probe
// where p answers one, so that its refusal, a step of an admission that
// may well succeed, is not counted among its rejections (see Stats).
func (p part) try(cost int64) (Grant, error) {
	if p.probe {
		return p.ref.AcquireGrant(probing, p.cost(cost))
	}
	return p.ref.TryAcquireGrant(p.cost(cost))
}

// answersProbe reports whether ref answers a probe: its type registered
// (internal/probe), or it is a bound on the wait of one that does.
func answersProbe(ref Refunder) bool {
	if m, ok := ref.(interface{ inner() Refunder }); ok {
		return answersProbe(m.inner())
	}
	return probe.Honours(ref)
}

func (p part) cost(c int64) int64 {
	if p.fixed != nil {
		return *p.fixed
	}
	return c
}

// add appends l's parts. fixed is the cost set by an enclosing FixedCost;
// the innermost one wins.
func (a *all) add(l Limiter, fixed *int64) {
	switch l := l.(type) {
	case *all:
		for _, p := range l.parts {
			if p.fixed == nil {
				p.fixed = fixed
			}
			a.parts = append(a.parts, p)
		}
		return
	case *fixedCost:
		a.add(l.lim, &l.n)
		return
	}
	p := part{lim: l, fixed: fixed}
	p.ref, _ = l.(Refunder)
	p.probe = p.ref != nil && answersProbe(p.ref)
	a.parts = append(a.parts, p)
}

// record is what a combined permit holds, recycled through all.records.
// tok.Value is the record itself.
type record struct {
	tok     Token
	owner   *all
	got     []Grant // per part; holds have only the Permit
	taken   []bool
	settled bool // Settle was called
}

// errAllBusy is TryAcquire's refusal while another request is being
// admitted by the rate limiters.
var errAllBusy = fmt.Errorf("%w: another request is being admitted", ErrRateLimited)

// maxRounds bounds the rounds of give-back-and-wait in takeRates.
const maxRounds = 4

func (a *all) Acquire(ctx context.Context, cost int64) (Permit, error) {
	if err := ctx.Err(); err != nil {
		return Permit{}, err
	}
	if cost < 1 {
		return Permit{}, InvalidCost(cost)
	}
	if a.turn != nil {
		// One request at a time, in the order they came: see All.
		select {
		case a.turn <- struct{}{}:
		case <-ctx.Done():
			return Permit{}, ctx.Err()
		}
		defer func() { <-a.turn }()
	}
	r := a.records.Get().(*record)
	for _, i := range a.holds {
		pm, err := a.parts[i].lim.Acquire(ctx, a.parts[i].cost(cost))
		if err != nil {
			a.undo(r)
			return Permit{}, err
		}
		r.got[i], r.taken[i] = Grant{Permit: pm}, true
	}
	if len(a.rates) > 0 {
		if err := a.takeRates(ctx, cost, r); err != nil {
			a.undo(r)
			return Permit{}, err
		}
	}
	return NewPermit(cost, a, &r.tok), nil
}

// takeRates takes every rate part at one instant, so that no rate's grant
// is spent while another rate makes the request wait. Each round tries the
// rates it does not hold without waiting; when one would make the request
// wait, it gives back what it took (at once, so the refunds give back all
// of it: nothing was admitted behind them but what came in those few
// microseconds), waits on that rate alone, keeps that grant, and tries the
// others again. Rates that bind one at a time settle in one round. After
// maxRounds rounds it waits on each rate it still lacks, in order, and keeps
// what it holds.
func (a *all) takeRates(ctx context.Context, cost int64, r *record) error {
	for round := 0; ; round++ {
		blocked := -1
		for _, i := range a.rates {
			if r.taken[i] {
				continue
			}
			p := a.parts[i]
			if round > maxRounds {
				g, err := p.ref.AcquireGrant(ctx, p.cost(cost))
				if err != nil {
					return err
				}
				r.got[i], r.taken[i] = g, true
				continue
			}
			g, err := p.try(cost)
			if err == nil {
				r.got[i], r.taken[i] = g, true
				continue
			}
			if !errors.Is(err, ErrRateLimited) {
				return err
			}
			blocked = i
			break
		}
		if blocked < 0 {
			return nil
		}
		for _, i := range a.rates {
			if r.taken[i] {
				a.parts[i].ref.Refund(r.got[i])
				r.taken[i] = false
			}
		}
		p := a.parts[blocked]
		g, err := p.ref.AcquireGrant(ctx, p.cost(cost))
		if err != nil {
			return err
		}
		r.got[blocked], r.taken[blocked] = g, true
	}
}

func (a *all) TryAcquire(cost int64) (Permit, error) {
	if cost < 1 {
		return Permit{}, InvalidCost(cost)
	}
	if a.turn != nil {
		select {
		case a.turn <- struct{}{}:
		default:
			return Permit{}, errAllBusy
		}
	}
	pm, err := a.tryAll(cost)
	if a.turn != nil {
		<-a.turn
	}
	return pm, err
}

func (a *all) tryAll(cost int64) (Permit, error) {
	r := a.records.Get().(*record)
	for _, i := range a.holds {
		pm, err := a.parts[i].lim.TryAcquire(a.parts[i].cost(cost))
		if err != nil {
			a.undo(r)
			return Permit{}, err
		}
		r.got[i], r.taken[i] = Grant{Permit: pm}, true
	}
	for _, i := range a.rates {
		g, err := a.parts[i].ref.TryAcquireGrant(a.parts[i].cost(cost))
		if err != nil {
			a.undo(r)
			return Permit{}, err
		}
		r.got[i], r.taken[i] = g, true
	}
	return NewPermit(cost, a, &r.tok), nil
}

// undo gives back every part r holds, rates refunded and holds released,
// in the reverse of the order they were taken, and recycles r.
func (a *all) undo(r *record) {
	for k := len(a.rates) - 1; k >= 0; k-- {
		if i := a.rates[k]; r.taken[i] {
			a.parts[i].ref.Refund(r.got[i])
		}
	}
	a.releaseHolds(r)
}

func (a *all) releaseHolds(r *record) {
	for k := len(a.holds) - 1; k >= 0; k-- {
		if i := a.holds[k]; r.taken[i] {
			r.got[i].Release()
		}
	}
	clear(r.got)
	clear(r.taken)
	r.settled = false
	a.records.Put(r)
}

// ReleasePermit releases every part of a combined permit. It is what
// Permit.Release calls, once per permit; call that instead.
func (a *all) ReleasePermit(p Permit) {
	r, ok := p.Token().Value.(*record)
	if !ok {
		return
	}
	for _, i := range a.rates {
		r.got[i].Release() // a no-op for rate permits, by contract
	}
	a.releaseHolds(r)
}
