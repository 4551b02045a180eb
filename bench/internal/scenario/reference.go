package scenario

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// CASGCRA is the reference for a non-blocking decision: GCRA with its
// theoretical arrival time (TAT) in one atomic word, decided by one load and
// one compare-and-swap, with no gate, no counters and no error values. A
// limiter with a lock-free fast path cannot do less per call than this and a
// clock read, so it marks the physical limit on this machine.
//
// The zero value is not usable; call NewCASGCRA. Safe for concurrent use.
type CASGCRA struct {
	_        [64]byte // keep tat on its own cache line, as a tuned limiter would
	tat      atomic.Int64
	_        [56]byte
	interval int64 // ns per unit
	tau      int64 // how far TAT may run ahead of now: burst·interval
	epoch    time.Time
}

// NewCASGCRA admits one unit every interval with bursts of up to burst
// units. interval must be at least 1ns and burst at least 1.
func NewCASGCRA(interval time.Duration, burst int64) *CASGCRA {
	return &CASGCRA{interval: int64(interval), tau: burst * int64(interval), epoch: time.Now()}
}

// Allow reports whether one unit may pass now, and takes it if so.
func (g *CASGCRA) Allow() bool {
	now := int64(time.Since(g.epoch))
	for {
		tat := g.tat.Load()
		next := max(tat, now) + g.interval
		if next-now > g.tau {
			return false
		}
		if g.tat.CompareAndSwap(tat, next) {
			return true
		}
	}
}

// EchoActor is the reference for a round trip through an owner goroutine:
// a mailbox in, a pooled reply channel out, batches drained per wake-up, and
// no decision at all. It is what sluice's actor would cost if deciding were
// free.
//
// Safe for concurrent use; Close it when done.
type EchoActor struct {
	mailbox chan *echoCall
	quit    chan struct{}
	done    chan struct{}
	calls   sync.Pool
}

type echoCall struct{ reply chan struct{} }

// NewEchoActor starts the owner goroutine.
func NewEchoActor() *EchoActor {
	a := &EchoActor{
		mailbox: make(chan *echoCall, 256),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	a.calls.New = func() any { return &echoCall{reply: make(chan struct{}, 1)} }
	go a.loop()
	return a
}

// Acquire sends one request and waits for its answer or for ctx.
func (a *EchoActor) Acquire(ctx context.Context) error {
	c := a.calls.Get().(*echoCall)
	select {
	case a.mailbox <- c:
	case <-a.done:
		return context.Canceled
	}
	select {
	case <-c.reply:
		a.calls.Put(c)
		return nil
	case <-ctx.Done():
		// The owner still answers; the call is not reused.
		return ctx.Err()
	}
}

// Close stops the owner and returns once it has exited.
func (a *EchoActor) Close() {
	close(a.quit)
	<-a.done
}

func (a *EchoActor) loop() {
	defer close(a.done)
	for {
		select {
		case c := <-a.mailbox:
			c.reply <- struct{}{}
		drain:
			for range 255 {
				select {
				case c = <-a.mailbox:
					c.reply <- struct{}{}
				default:
					break drain
				}
			}
		case <-a.quit:
			return
		}
	}
}
