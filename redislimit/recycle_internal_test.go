package redislimit

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/algorithms"
)

// TestRecycleReusesOnlyGrantsAndCarriesNothingOver: a granted request
// comes back as a new one with nothing of its last use (a ticket left
// over would let Refund take back a grant that was not its call's last);
// a request whose caller gave up, or that was refused, is never reused,
// since the owner may still hold it.
func TestRecycleReusesOnlyGrantsAndCarriesNothingOver(t *testing.T) {
	// No call is made: the client only has to exist.
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	l, err := New(c, "k", algorithms.PerSecond(10), 5)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	e := l.e
	ctx := context.Background()

	// sync.Pool may drop what it is given (under -race, a quarter of it on
	// purpose), so each case tries until the pool hands something back.
	const tries = 200
	var reused bool
	for range tries {
		r := e.newRequest(ctx, "k", opAcquire, 3)
		r.state.Store(rqDone)
		r.status, r.n, r.ticket, r.waited, r.phase = stGranted, 42, ident{w: 1, f: 2, n: 3, ok: true}, true, phGone
		e.recycle(r)
		got := e.newRequest(ctx, "k2", opTry, 1)
		if got != r {
			continue
		}
		reused = true
		if got.state.Load() != rqWaiting || got.status != 0 || got.n != 0 || got.ticket.ok || got.waited || got.phase != phPending ||
			got.key != "k2" || got.op != opTry || got.cost != 1 || got.reply == nil {
			t.Fatalf("a recycled request carries its last use: %+v", got)
		}
		break
	}
	if !reused {
		t.Fatalf("no granted request came back in %d tries", tries)
	}

	for _, kept := range []struct {
		name   string
		state  int32
		status status
	}{
		{"given up", rqCancelled, 0},
		{"refused", rqDone, stLimited},
		{"closed", rqWaiting, stClosed},
	} {
		for range tries {
			r := e.newRequest(ctx, "k", opAcquire, 1)
			r.state.Store(kept.state)
			r.status = kept.status
			e.recycle(r)
			if got := e.newRequest(ctx, "k", opAcquire, 1); got == r {
				t.Fatalf("a request %s was reused", kept.name)
			}
		}
	}
}
