package keyed

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/configerr"
	"github.com/sluicehq/sluice/internal/quota"
	"github.com/sluicehq/sluice/permits"
)

// Changing one key's limit while it runs (issue 13), as actor.Limiter's
// SetRate and SetBurst do for one limit: a request to the key's shard
// owner, applied in order with the key's other requests.

// SetRate changes key's rate at once, keeping its burst, as
// actor.Limiter.SetRate does for one limit: the key's queued waiters are
// re-timed at once, in order, from the change's instant (never before it);
// nothing already granted is taken back (the units still owed are paid at
// the new rate); the lock-free paths see the new rate atomically. Other
// keys are not touched. It returns once the key's owner has applied it.
//
// The new rate holds for as long as the key is live. A changed key is
// kept, even full and unused, for its window at the new configuration
// (the time its state takes to refill from empty, 10ms at the least) plus
// WithIdleTimeout; after that it is dropped as any key is once it is full
// and unused, and its next request makes it anew with the constructor
// given to New. A key that is not live is made first, with the
// constructor, and then changed, so the setting is not lost. A limit that
// must outlast idleness belongs in the constructor (have it read the key's
// current setting), with SetRate for the keys live at the moment.
//
// A key that was a cell (see the package doc) gets an algorithm of its
// own, a GCRA that carries on exactly from its cell, taken out of the cell
// in one atomic step with the lock-free decisions on it: from then on it
// costs what a key with its own algorithm costs, until it is dropped.
//
// It fails, changing nothing, with an error matching
// permits.ErrInvalidConfig for an invalid rate, ErrNotTunable when the
// key's algorithm cannot change, permits.ErrClosed once the limiter is
// closed, and, for a key that is not live, Acquire's errors for making one
// (ErrTooManyKeys, *AlgorithmError).
func (l *Limiter[K]) SetRate(key K, rate algorithms.Rate) error { return l.tune(key, rate, 0) }

// SetBurst changes key's burst (the capacity of a bucket) at once, keeping
// its rate; see SetRate. A waiter of the key whose cost no longer fits
// fails with an error matching permits.ErrCostExceedsCapacity, and so does
// a request that checked its cost against the old burst and reaches the
// owner just after the change. A window has no burst: it fails with
// ErrNotTunable.
func (l *Limiter[K]) SetBurst(key K, burst int64) error {
	if burst < 1 {
		return configerr.Errorf("keyed", "burst must be positive, got %d", burst)
	}
	return l.tune(key, algorithms.Rate{}, burst)
}

// tuning is a SetRate (burst 0) or SetBurst request, and its answer.
type tuning struct {
	rate  algorithms.Rate
	burst int64
	err   error
}

func (l *Limiter[K]) tune(key K, rate algorithms.Rate, burst int64) error {
	if l.closed.Load() {
		return permits.ErrClosed
	}
	s, h, err := l.shard(key)
	if err != nil {
		return err
	}
	a, err := s.attempt(key, h, 0, false, true) // cost 0: pins the key, made if need be
	if err != nil {
		return err
	}
	c := s.newCall(context.Background(), opTune, a.e, 0, l.stamp())
	x := &tuning{rate: rate, burst: burst}
	c.tune = x
	c = s.roundTrip(context.Background(), c)
	st := c.Status
	s.recycle(c)
	if st == stClosed {
		return permits.ErrClosed
	}
	return x.err
}

// tune applies c's new rate or burst to its key, framed as actor's owner
// frames a change (actor/tune.go, changing and changed): from a fresh
// clock reading, not the batch's, since a lock-free decision on the key
// may have been made after the batch's instant; granting first what was
// due by then, as it was due; and re-timing the queue from that instant,
// never before it, since what a new rate frees was not there earlier.
func (s *shard[K]) tune(c *call[K]) {
	e, x := c.e, c.tune
	now := s.now()
	s.grantDue(e, now)
	x.err = s.retune(e, now, x.rate, x.burst)
	if w := e.waiters(); w != nil {
		if x.err == nil {
			s.failTooLarge(e, w, now)
		}
		if w.q.Len() > 0 && !w.awaiting {
			w.q.Hold(now)
			w.q.Retime()
			w.shadowOK = false
			due := w.q.Due(now)
			w.publish(due)
			s.watch(e, due)
		}
	}
	s.reply(c, stGranted, 0) // first: settle gives a cell key's entry back only once nothing of it is at the owner
	if e.waiters() == nil {
		// Looked at by the next pass: a change that succeeded counts from
		// keep (see shard.full).
		s.settle(e, now)
	}
}

// retune changes e's algorithm; a cell key first gets one of its own. A
// setting its algorithm refuses changes nothing: it is tried on a copy of
// a cell first, so that a cell key stays one.
//
// Callers read a key's capacity and rate from their own goroutines (the
// capacity check, the Quota). An algorithm with a lock-free form keeps its
// configuration in atomic words, and is changed in place, beside its
// fast-path callers; any other (a sliding window) is changed on a copy,
// which then replaces it: only the owner decides on such a key, and the
// algorithm callers may be reading is never written again.
func (s *shard[K]) retune(e *entry[K], now int64, rate algorithms.Rate, burst int64) error {
	t := s.l.t(now)
	if e.isCell() {
		if err := setLimit(s.cells().Clone(&e.cell), t, rate, burst); err != nil {
			return err
		}
		s.detach(e)
	}
	if _, ok := e.alg().(algorithms.Gated); ok {
		if err := setLimit(e.alg(), t, rate, burst); err != nil {
			return err
		}
	} else {
		c, ok := e.alg().(algorithms.Cloner)
		if !ok {
			return fmt.Errorf("%w: %T has no lock-free form and cannot be copied, so keyed cannot change it beside its callers", ErrNotTunable, e.alg())
		}
		alg := c.Clone()
		if err := setLimit(alg, t, rate, burst); err != nil {
			return err
		}
		old := e.x.Load()
		x := &extra[K]{alg: alg, keep: old.keep}
		x.w.Store(old.w.Load())
		e.x.Store(x)
	}
	s.relock(e)
	// A change counts as a use that could have emptied the key: it is not
	// dropped before its state could refill at the new configuration.
	e.x.Load().keep = now + int64(max(quota.Window(e.alg()), recheck))
	return nil
}

// setLimit gives alg a new rate (burst 0) or burst at t.
func setLimit(alg algorithms.Algorithm, t time.Time, rate algorithms.Rate, burst int64) error {
	tn, ok := alg.(algorithms.Tunable)
	if !ok {
		return fmt.Errorf("%w: %T", ErrNotTunable, alg)
	}
	if burst == 0 {
		return tn.SetRateAt(t, rate)
	}
	err := tn.SetBurstAt(t, burst)
	switch alg.(type) {
	case *algorithms.SlidingWindow, *algorithms.FixedWindow:
		if errors.Is(err, permits.ErrInvalidConfig) {
			return fmt.Errorf("%w: %v", ErrNotTunable, err) // a window has no burst
		}
	}
	return err
}

// detach gives cell key e an algorithm of its own that carries on exactly
// from its cell (algorithms.Cells.Detach), under the write lock, so that a
// caller looking under a lock finds it whole: a cell, or an algorithm
// with its waiters. Callers without a lock that decide on the cell
// meanwhile find it retired, and look again (pin).
func (s *shard[K]) detach(e *entry[K]) {
	s.mu.Lock()
	x := &extra[K]{alg: s.cells().Detach(&e.cell)}
	if hook := s.l.cfg.detached; hook != nil {
		hook(e)
	}
	x.w.Store(e.waiters())
	e.x.Store(x) // before the flags: a caller that sees them changed finds alg
	for {
		w := e.word.Load()
		if e.word.CompareAndSwap(w, w&^fCell|fLockFree) {
			break
		}
	}
	s.mu.Unlock()
}

// relock sets e's fLockFree flag to what its algorithm is now: a new rate
// can take it into the wide form, where the fast path cannot decide, or
// back. A key that has become lock-free with nobody waiting has its gate
// opened, as a queue that empties does; while it has waiters, its gate is
// closed (the owner closes it on a denial, and an algorithm that comes
// back from the wide form closes it).
func (s *shard[K]) relock(e *entry[K]) {
	g, ok := e.alg().(algorithms.Gated)
	lockFree := ok && g.LockFree()
	for {
		w := e.word.Load()
		nw := w &^ fLockFree
		if lockFree {
			nw |= fLockFree
		}
		if nw == w || e.word.CompareAndSwap(w, nw) {
			break
		}
	}
	if lockFree && e.waiters() == nil {
		g.OpenGate()
	}
}

// failTooLarge fails e's waiters whose cost no longer fits its capacity.
func (s *shard[K]) failTooLarge(e *entry[K], w *waiters[K], now int64) {
	capacity := s.capacity(e)
	for n := w.q.Head(); n != nil; {
		next := n.Next()
		if n.Cost > capacity {
			w.q.Remove(n, now)
			s.reply(n.Value, stTooLarge, capacity)
		}
		n = next
	}
	if w.q.Len() == 0 {
		s.quiet(e, now)
	}
}
