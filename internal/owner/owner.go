package owner

import (
	"context"
	"runtime/pprof"
	"sync/atomic"
	"time"
)

// Timer is the part of *time.Timer an owner uses. Reset and Stop must have
// the semantics of Go 1.23 and later: after either returns, no stale value
// is received from C.
type Timer interface {
	C() <-chan time.Time
	Reset(d time.Duration) bool
	Stop() bool
}

// Owner is the core of one owner goroutine. Its zero value is not ready:
// call Init, then Start.
type Owner[C any] struct {
	stamp    func() int64              // a caller's reading of the clock, ns on the timeline
	newTimer func(time.Duration) Timer // the clock's timers
	wake     chan struct{}             // capacity 1: a token means "look at the inbox"
	done     chan struct{}             // closed when Run returns
	closed   atomic.Bool               // set by Stop, before the owner is woken
	hook     atomic.Pointer[func()]    // tests: called by the owner before it parks

	// inbox holds requests newest first, linked through Call.next;
	// cancels holds cancellations, linked through Call.cancelNext.
	// Callers write them; they have a cache line of their own, apart from
	// what the owner writes and callers only read.
	_       [64]byte
	inbox   atomic.Pointer[Call[C]]
	cancels atomic.Pointer[Call[C]]
	queued  atomic.Int64 // the Units of the requests pushed and not yet taken
	_       [40]byte

	sleep atomic.Int32 // awake, asleep or asleepTimed (inbox.go)
	poked atomic.Bool  // a change to look at that the inbox does not carry
	wakes atomic.Int64 // wake-ups, for tests

	// owned by Run
	timer   Timer
	armedAt int64
	armed   bool
}

// Init prepares o: stamp is a caller's reading of the clock on the
// owner's timeline (a cancellation carries it), newTimer makes the one
// timer the owner arms.
func (o *Owner[C]) Init(stamp func() int64, newTimer func(time.Duration) Timer) {
	o.stamp, o.newTimer = stamp, newTimer
	o.wake = make(chan struct{}, 1)
	o.done = make(chan struct{})
}

// Start runs p's owner goroutine under pprof labels, so that a goroutine
// dump, and a goleak report with GODEBUG=tracebacklabels=1, names the
// limiter. Stop ends it; Done tells when it has.
func (o *Owner[C]) Start(labels pprof.LabelSet, p Plugin[C]) {
	go pprof.Do(context.Background(), labels, func(context.Context) { o.run(p) })
}

// Stop makes the owner answer everything it holds with Closed and exit.
// The order matters (inbox.go): closed first, so that a caller that reads
// it false after pushing its request knows the owner's last take of the
// inbox comes after the push. It returns at once; Done is closed when the
// owner has exited. Idempotent.
func (o *Owner[C]) Stop() {
	if o.closed.CompareAndSwap(false, true) {
		o.kick() // even if it looks awake: the token makes its next park return
	}
}

// Done is closed once the owner goroutine has exited.
func (o *Owner[C]) Done() <-chan struct{} { return o.done }

// Closed reports whether Stop was called.
func (o *Owner[C]) Closed() bool { return o.closed.Load() }

// Wakes counts the owner's wake-ups, for tests.
func (o *Owner[C]) Wakes() int64 { return o.wakes.Load() }

// SetParkHook makes the owner call f, on its own goroutine, each time it
// is about to park (tests).
func (o *Owner[C]) SetParkHook(f func()) { o.hook.Store(&f) }

// Depth counts the requests in the inbox, not yet taken (tests: read it
// while the owner is frozen).
func (o *Owner[C]) Depth() int {
	n := 0
	for c := o.inbox.Load(); c != nil; c = c.next {
		n++
	}
	return n
}
