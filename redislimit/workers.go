package redislimit

import (
	"context"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"
)

// A batch's state says who delivered it to the owner: exactly one of the
// worker that made its calls, the timer of WithCallTimeout, or the owner
// itself when it closes.
const (
	bPending int32 = iota
	bAnswered
	bTimedOut
	bClosed
)

// pool holds the worker goroutines that make the script calls. One is
// enough while Redis answers in time; a worker whose call outlived its
// timeout is still waiting for go-redis (which bounds a call by its
// ReadTimeout and retries, and by the context only with
// ContextTimeoutEnabled), and while it waits no other call is made
// (node.reachable): on a hung server the calls would only queue behind
// it, a goroutine and a connection each. Workers outlive their batches so
// that their stacks, grown once by go-redis's call path, are not grown
// again for every call.
type pool struct {
	mu     sync.Mutex
	idle   []*worker
	closed bool
	live   int           // workers started and not yet exited
	gone   chan struct{} // made by close; closed once live is 0
}

type worker struct{ jobs chan *batch }

// start hands b to an idle worker, starting one if none is idle. The
// holder of the state only (direct.go).
func (e *engine) start(b *batch) {
	p := &e.workers
	p.mu.Lock()
	var w *worker
	if n := len(p.idle); n > 0 {
		w, p.idle = p.idle[n-1], p.idle[:n-1]
	} else {
		w = &worker{jobs: make(chan *batch, 1)}
		p.live++
		go pprof.Do(context.Background(), e.labels, func(context.Context) { e.work(w) })
	}
	p.mu.Unlock()
	w.jobs <- b
}

// work is a worker's loop.
func (e *engine) work(w *worker) {
	defer e.workers.exited()
	for b := range w.jobs {
		if b.back != nil {
			b.back <- e.call(b, b.due) // a caller's on the direct path, which keeps its deadline
		} else {
			e.exec(b)
		}
		if !e.workers.put(w) {
			return
		}
	}
}

// spawn runs f on a goroutine counted with the workers, so that close
// waits for it as for them; not at all once the pool is closed.
func (p *pool) spawn(labels pprof.LabelSet, f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.live++
	go pprof.Do(context.Background(), labels, func(context.Context) {
		defer p.exited()
		f()
	})
}

// exited counts a worker out.
func (p *pool) exited() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.live--
	if p.live == 0 && p.gone != nil {
		close(p.gone)
	}
}

// put makes w idle again, unless the pool is closed.
func (p *pool) put(w *worker) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.idle = append(p.idle, w)
	return true
}

// close stops the idle workers and waits for the busy ones to finish
// their calls, but no longer than wait: a worker stuck inside go-redis on
// a hung server exits when go-redis gives up (its ReadTimeout and
// retries), touching nothing but its own batch, which nobody reads.
func (p *pool) close(wait time.Duration) {
	p.mu.Lock()
	p.closed = true
	for _, w := range p.idle {
		close(w.jobs)
	}
	p.idle = nil
	p.gone = make(chan struct{})
	if p.live == 0 {
		close(p.gone)
	}
	gone := p.gone
	p.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-gone:
	case <-t.C:
	}
}

// exec makes a batch's script calls on a worker and delivers the answers
// to the owner, unless the call timeout (or Close) delivered the batch
// first: a call that outlives its timeout is counted as consumed and its
// late answer dropped.
func (e *engine) exec(b *batch) {
	e.stampArgs(b)
	b.timer = time.AfterFunc(e.cfg.callTimeout, func() { e.timeout(b, false) })
	as := e.call(b, time.Now().Add(e.cfg.callTimeout))
	b.timer.Stop()
	if e.deliver(b, as) {
		e.results <- b
	}
}

// stampArgs runs the test hook before a call, gives the calls the
// instant a test drives, and stamps the batch as sent.
func (e *engine) stampArgs(b *batch) {
	if e.cfg.beforeCall != nil {
		e.cfg.beforeCall()
	}
	if e.cfg.serverNow != nil {
		now := e.cfg.serverNow()
		for _, kc := range b.keys {
			if kc.lean {
				kc.args[0] = leanAt(kc.args[0].(string), now)
			} else {
				kc.args[e.nowArg] = strconv.FormatInt(now, 10)
			}
		}
	}
	b.s = e.stamp() // before any timeout: a batch it delivers carries it
}

// deliver gives b its answers, unless the timeout (or Close) took b
// first, and reports whether they count.
func (e *engine) deliver(b *batch, as []answer) bool {
	if !b.state.CompareAndSwap(bPending, bAnswered) {
		return false
	}
	b.r = e.stamp()
	for i, kc := range b.keys {
		kc.answer = as[i]
	}
	return true
}

// timeout delivers b, whose calls did not answer within WithCallTimeout,
// to the owner, and with inline the state too (see direct.go).
func (e *engine) timeout(b *batch, inline bool) {
	if !b.state.CompareAndSwap(bPending, bTimedOut) {
		return
	}
	b.r = e.stamp()
	for _, kc := range b.keys {
		kc.err = &TimeoutError{After: e.cfg.callTimeout}
	}
	if inline {
		e.tok.Store(tokOwner)
	}
	e.results <- b
	e.kick()
}
