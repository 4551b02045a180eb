package breaker

import "time"

// maxPending is how many transitions wait for the hook at most. A storm of
// transitions faster than the hook (issue 10: a 1µs open timeout and a
// 200µs hook queued 584,259 of them in a second, 11 MB, and one Do spent
// five minutes delivering) keeps the latest four and a count of the rest.
const maxPending = 4

// pendingTransition is a transition queued for the hook: 24 bytes.
type pendingTransition struct {
	at       time.Duration // offset from the breaker's origin
	dropped  int64         // transitions dropped just before this one
	from, to int8
}

// hookQueue holds the transitions not yet delivered, oldest at head. A
// Breaker has one only when it has a hook. Guarded by the Breaker's mutex.
type hookQueue struct {
	ring       [maxPending]pendingTransition
	head, n    int8
	delivering bool  // a goroutine is running deliver
	dropped    int64 // dropped since New, for Snapshot
}

// push queues t, dropping the oldest transition if the queue is full; the
// next oldest then carries the count of what was dropped before it.
func (q *hookQueue) push(t pendingTransition) {
	if q.n == maxPending {
		carry := q.ring[q.head].dropped + 1
		q.head = (q.head + 1) % maxPending
		q.n--
		q.dropped++
		if q.n > 0 {
			q.ring[q.head].dropped += carry
		} else {
			t.dropped += carry
		}
	}
	q.ring[(q.head+q.n)%maxPending] = t
	q.n++
}

// pop removes and returns the oldest transition. It requires q.n > 0.
func (q *hookQueue) pop() pendingTransition {
	t := q.ring[q.head]
	q.head = (q.head + 1) % maxPending
	q.n--
	return t
}

// ready reports whether a call should deliver: transitions are queued and
// nobody is delivering them. It requires b.mu held.
func (b *Breaker) ready() bool {
	return b.hook != nil && b.hook.n > 0 && !b.hook.delivering
}

// unlock releases b.mu and then delivers the transitions waiting for the
// hook, unless another goroutine is delivering them. It requires b.mu held.
func (b *Breaker) unlock() {
	deliver := b.ready()
	b.mu.Unlock()
	if deliver {
		b.deliver()
	}
}

// queue records the transition from -> to at offset now for the hook. It
// requires b.mu held.
func (b *Breaker) queue(from, to State, now time.Duration) {
	if b.hook != nil {
		b.hook.push(pendingTransition{at: now, from: int8(from), to: int8(to)})
	}
}

// deliver calls the hook for the transitions queued when it starts, oldest
// first, with b.mu released around each call, unless another goroutine is
// delivering already. The flag under b.mu makes deliveries never overlap or
// reorder. Stopping at what was queued at the start bounds the work of one
// call whatever the rate of transitions; what is queued meanwhile waits for
// the next call, which finds the flag down again.
func (b *Breaker) deliver() {
	b.mu.Lock()
	if !b.ready() {
		b.mu.Unlock()
		return
	}
	q := b.hook
	q.delivering = true
	quota := q.n
	b.mu.Unlock()
	finished := false
	defer func() {
		if !finished { // the hook panicked: let the next call deliver the rest
			b.mu.Lock()
			q.delivering = false
			b.mu.Unlock()
		}
	}()
	for range quota {
		b.mu.Lock()
		// Only this goroutine pops, and a push never lowers q.n, so q.n >= 1
		// here; the check keeps that argument local.
		if q.n == 0 {
			b.mu.Unlock()
			break
		}
		p := q.pop()
		b.mu.Unlock()
		b.cfg.onTransition(Transition{
			Name: b.cfg.name, From: State(p.from), To: State(p.to),
			At: b.origin.Add(p.at), Dropped: p.dropped,
		})
	}
	b.mu.Lock()
	q.delivering = false
	b.mu.Unlock()
	finished = true
}
