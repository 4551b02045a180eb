package actor

// expiryList holds, in the order they were queued, the waiters that the
// owner must refuse when their WithMaxWait runs out because their grant was
// not predicted exactly: an algorithm without algorithms.Cloner (a remote
// one), or lanes, whose predictions are lower bounds. Every such waiter
// expires WithMaxWait after its arrival, and arrivals are queued in order,
// so the list is in order of expiry: the owner pops expired entries from
// the front, and skips entries whose waiter has left the queue (granted or
// cancelled) or whose pooled call has since been queued again (gen). An
// entry keeps its waiter's lane, since an answered call is its caller's to
// fill in again; the owner reads only what it alone writes (gen, the node's
// links).
type expiryList struct {
	items []expiring
	head  int
}

type expiring struct {
	c    *call
	lane *Lane // c's lane while queued: c itself is its caller's once answered
	gen  uint32
	at   int64
}

// add lists c, which was just queued, to expire at at.
func (l *expiryList) add(c *call, at int64) {
	l.items = append(l.items, expiring{c: c, lane: c.lane, gen: c.gen, at: at})
}

// live reports whether e still names a queued waiter.
func (e expiring) live(r *runtime) bool {
	if e.c.gen != e.gen {
		return false
	}
	if r.lanes == nil {
		return r.q.Contains(&e.c.node)
	}
	fl := &r.lanes.parent.flow
	if e.lane != nil {
		fl = &e.lane.flow
	}
	return fl.Contains(&e.c.node)
}

// expire refuses every waiter whose wait ran out by now, with a RetryAfter
// of the head's next due instant: a lower bound on any wait behind it.
func (l *expiryList) expire(now int64, r *runtime) {
	for l.head < len(l.items) {
		e := l.items[l.head]
		if e.live(r) {
			if e.at > now {
				break
			}
			// What was due by the time its wait ran out is granted first,
			// as for a cancellation: a wait of exactly d is kept.
			r.grantDue(e.at)
			if e.live(r) {
				r.unqueue(e.c, e.at)
				r.refuse(e.c, stLimited, max(r.due(now), now+1)-now)
			}
		}
		l.items[l.head] = expiring{}
		l.head++
	}
	if l.head == len(l.items) {
		l.clear()
	}
}

// next returns the earliest expiry still pending, or 0, dropping the
// entries in front whose waiter has gone.
func (l *expiryList) next(r *runtime) int64 {
	for l.head < len(l.items) {
		if e := l.items[l.head]; e.live(r) {
			return e.at
		}
		l.items[l.head] = expiring{}
		l.head++
	}
	l.clear()
	return 0
}

func (l *expiryList) clear() {
	clear(l.items)
	l.items, l.head = l.items[:0], 0
}
