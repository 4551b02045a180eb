package breaker_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/breaker"
)

// When a hook delivers what: a transition made while the hook runs reaches
// it as soon as the hook returns, in order, without any further call
// (issue 25, item 10), and no caller is held delivering for ever.

// heldHook is a WithOnTransition hook that keeps every transition and holds
// the first one until release is closed.
type heldHook struct {
	release chan struct{}
	mu      sync.Mutex
	got     []breaker.Transition
}

func newHeldHook() *heldHook { return &heldHook{release: make(chan struct{})} }

func (h *heldHook) hook(tr breaker.Transition) {
	h.mu.Lock()
	h.got = append(h.got, tr)
	first := len(h.got) == 1
	h.mu.Unlock()
	if first {
		<-h.release
	}
}

// transitions returns what the hook received, as "from->to@offset" from t0.
func (h *heldHook) transitions(t0 time.Time) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var s []string
	for _, tr := range h.got {
		s = append(s, fmt.Sprintf("%v->%v@%v", tr.From, tr.To, tr.At.Sub(t0)))
		if tr.Dropped != 0 {
			s[len(s)-1] += fmt.Sprintf(" (%d dropped)", tr.Dropped)
		}
	}
	return s
}

// TestATransitionMadeWhileTheHookRunsIsDeliveredWhenItReturns: the hook
// holds closed->open; meanwhile a second second passes and a call goes
// half-open and closes the breaker. Once the hook returns, both transitions
// reach it although nobody calls the breaker again.
func TestATransitionMadeWhileTheHookRunsIsDeliveredWhenItReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHeldHook()
		b := mustNew(t, breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(time.Second),
			breaker.WithOnTransition(h.hook))
		t0 := time.Now()
		var wg sync.WaitGroup
		wg.Go(func() { b.Do(ctx, fail) }) // trips; the hook holds closed->open
		synctest.Wait()
		time.Sleep(time.Second)
		if err := b.Do(ctx, succeed); err != nil { // the probe: open->half-open->closed
			t.Fatalf("the probe: %v", err)
		}
		close(h.release) // from here on, no call of the breaker
		synctest.Wait()
		want := []string{"closed->open@0s", "open->half-open@1s", "half-open->closed@1s"}
		if got := h.transitions(t0); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("once the hook returned, it received %v; want %v", got, want)
		}
		wg.Wait()
	})
}

// TestTransitionsMadeWhileTheHookRunsAreDeliveredInOrder: four transitions
// made while the hook holds the first, at two instants, reach it in the
// order and at the instants they were made, none dropped.
func TestTransitionsMadeWhileTheHookRunsAreDeliveredInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHeldHook()
		b := mustNew(t, breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(time.Second),
			breaker.WithOnTransition(h.hook))
		t0 := time.Now()
		var wg sync.WaitGroup
		wg.Go(func() { b.Do(ctx, fail) })
		synctest.Wait()
		time.Sleep(time.Second)
		b.Do(ctx, fail) // at 1s: open->half-open, and the probe fails: half-open->open
		time.Sleep(time.Second)
		b.Do(ctx, succeed) // at 2s: open->half-open->closed
		close(h.release)
		synctest.Wait()
		want := []string{
			"closed->open@0s",
			"open->half-open@1s", "half-open->open@1s",
			"open->half-open@2s", "half-open->closed@2s",
		}
		if got := h.transitions(t0); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("the hook received %v; want %v", got, want)
		}
		wg.Wait()
	})
}

// TestAHookStormThatEndsLeavesNothingPending: four goroutines fail calls a
// microsecond apart against a 1µs open timeout and a 200µs hook, then stop,
// the last thing one of them does being ForceOpen (so that no later call
// can make a transition of its own). With nobody calling any more, every
// transition has been delivered or counted as dropped, the last one
// delivered is that ForceOpen, and nothing is pending.
func TestAHookStormThatEndsLeavesNothingPending(t *testing.T) {
	const hookTime = 200 * time.Microsecond
	synctest.Test(t, func(t *testing.T) {
		var (
			mu      sync.Mutex
			hooked  int64
			dropped int64
			last    breaker.Transition
		)
		b := mustNew(t, breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(time.Microsecond),
			breaker.WithOnTransition(func(tr breaker.Transition) {
				mu.Lock()
				hooked++
				dropped += tr.Dropped
				last = tr
				mu.Unlock()
				time.Sleep(hookTime)
			}))
		start := time.Now()
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for time.Since(start) < 20*time.Millisecond {
					b.Do(ctx, fail)
					time.Sleep(time.Microsecond)
				}
				if w == 0 {
					b.ForceOpen()
				}
			})
		}
		wg.Wait()
		synctest.Wait()
		mu.Lock()
		h, d, l := hooked, dropped, last
		mu.Unlock()
		snap := b.Snapshot() // forced open: it makes no transition of its own
		if snap.PendingTransitions != 0 {
			t.Errorf("%d transitions pending with nobody calling", snap.PendingTransitions)
		}
		if h+d != snap.Transitions || d != snap.DroppedTransitions {
			t.Errorf("%d delivered + %d dropped, want the %d transitions made (%d dropped)",
				h, d, snap.Transitions, snap.DroppedTransitions)
		}
		if !snap.Forced || l.To != breaker.Open || !l.At.Equal(snap.LastTransition) {
			t.Errorf("the last transition delivered is %v->%v at %v; want the ForceOpen at %v",
				l.From, l.To, l.At.Sub(start), snap.LastTransition.Sub(start))
		}
		if snap.Transitions < 1000 {
			t.Errorf("only %d transitions: not a storm", snap.Transitions)
		}
	})
}

// TestAHookThatKeepsMakingTransitionsReleasesItsCaller: a hook that makes
// a transition every time it runs (ForceOpen on closed, Reset on open)
// would keep the call delivering for ever if it delivered until the queue
// is empty. The call returns after a bounded number of hook calls; the
// next call goes on from there.
func TestAHookThatKeepsMakingTransitionsReleasesItsCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b *breaker.Breaker
		var calls atomic.Int64
		b = mustNew(t, breaker.WithOnStateChange(func(from, to breaker.State) {
			if calls.Add(1) > 1000 {
				return // a safety net for the test: it stops the chain
			}
			if to == breaker.Open {
				b.Reset()
			} else {
				b.ForceOpen()
			}
		}))
		b.ForceOpen()
		first := calls.Load()
		if first > 10 {
			t.Fatalf("ForceOpen made %d hook calls before returning, want at most 10", first)
		}
		b.State()
		if second := calls.Load() - first; second < 1 || second > 10 {
			t.Fatalf("the next call made %d hook calls, want 1 to 10", second)
		}
	})
}
