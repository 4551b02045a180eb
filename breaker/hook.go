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
// Breaker has one only when it has a hook or a logger (WithLogger), which
// share it. Guarded by the Breaker's mutex.
type hookQueue struct {
	ring       [maxPending]pendingTransition
	head, n    int8
	delivering bool  // a goroutine owns the delivery (see claim)
	dropped    int64 // dropped since New, for Snapshot
	// offer is non-nil while the delivering goroutine, between two hook
	// calls, offers the rest of the queue to another call; the call that
	// takes it closes it.
	offer chan struct{}
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

// claim makes the calling goroutine the one that delivers, and reports
// whether it did: transitions are queued and either nobody is delivering
// them or the goroutine delivering them is offering them (handOff). A
// goroutine whose claim succeeds must call deliver before it runs any user
// code. It requires b.mu held.
func (b *Breaker) claim() bool {
	q := b.hook
	switch {
	case q == nil || q.n == 0:
		return false
	case !q.delivering:
		q.delivering = true
		return true
	case q.offer != nil:
		// The deliverer waits between two hook calls, so this call runs in
		// no hook: taking over cannot make the hook run within itself.
		close(q.offer)
		q.offer = nil
		return true
	}
	return false
}

// unlock releases b.mu and then delivers the transitions waiting for the
// hook, unless another goroutine is delivering them. It requires b.mu held.
func (b *Breaker) unlock() {
	deliver := b.claim()
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

// deliver calls the hook for the queued transitions, oldest first, with
// b.mu released around each call, until the queue is empty: a transition
// made while the hook runs, by this goroutine (from within the hook) or by
// another one (which found the delivery owned), is delivered as soon as the
// hook returns, with no further call needed. It requires a successful claim
// by the calling goroutine; only the owner pops, so deliveries never overlap
// or reorder.
//
// Until empty must not mean for ever, in two cases:
//
//   - A storm: other calls make transitions faster than the hook takes them
//     (the storm test: one a microsecond, a 200µs hook). Before its third
//     hook call the owner offers the queue to other calls, for as long as
//     its last hook call took (handOff): in a storm a call comes well within
//     that, takes the delivery over, and this one returns. If none comes,
//     the storm is over or never was, and the owner delivers the rest
//     itself, so the end of a storm leaves nothing pending. A Do that is
//     the last caller of a storm thus spends 2 hook calls, the wait and the
//     4 left in the queue, then one more for a transition made meanwhile
//     (its own outcome's, or a Snapshot's): 8 hook calls' time, the storm
//     test's bound of two deliveries of four.
//   - A hook that makes transitions itself (a Reset in the hook for every
//     open, a ForceOpen for every close): nobody can take an offer made to
//     it, since only the owner runs the hook. After an offer nobody took,
//     the owner makes at most 2·maxPending hook calls, enough for the four
//     queued and four more, then stops: the rest waits for the next call,
//     as every transition made in the hook did before issue 25.
//
// So one delivery makes at most 2 + 2·maxPending hook calls and waits once,
// for at most one hook call's time, whatever the hook and the traffic do.
func (b *Breaker) deliver() {
	q := b.hook
	finished := false
	defer func() {
		if !finished { // the hook panicked: let the next call deliver the rest
			b.mu.Lock()
			q.delivering = false
			b.mu.Unlock()
		}
	}()
	const beforeOffer = 2  // hook calls before the offer
	var took time.Duration // how long the last hook call took
	b.mu.Lock()
	for made := 0; q.n > 0 && made < beforeOffer+2*maxPending; made++ {
		if made == beforeOffer && b.handOff(took) {
			finished = true
			return
		}
		p := q.pop()
		b.mu.Unlock()
		start := time.Now()
		b.cfg.deliver(Transition{
			Name: b.cfg.name, From: State(p.from), To: State(p.to),
			At: b.origin.Add(p.at), Dropped: p.dropped,
		})
		took = time.Since(start)
		b.mu.Lock()
	}
	q.delivering = false
	b.mu.Unlock()
	finished = true
}

// handOff offers the queue to another call for up to wait, and reports
// whether one took it over: the first call to claim meanwhile becomes the
// owner, and this goroutine must deliver no more. It requires b.mu held and
// the calling goroutine owning the delivery; it returns with b.mu released
// if the offer was taken and held if not. It makes a timer and a channel:
// deliver calls it only before the third hook call of one delivery.
func (b *Breaker) handOff(wait time.Duration) (taken bool) {
	q := b.hook
	offer := make(chan struct{})
	q.offer = offer
	b.mu.Unlock()
	t := time.NewTimer(wait)
	select {
	case <-offer:
		t.Stop()
		return true
	case <-t.C:
	}
	b.mu.Lock()
	if q.offer == nil { // taken as the timer fired
		b.mu.Unlock()
		return true
	}
	q.offer = nil
	return false
}
