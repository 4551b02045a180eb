package redislimit_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// Close while callers acquire, settle, refund and pause, on the direct
// path and through the owner: every call returns, with a documented
// answer, and nothing leaks (goleak).
func TestWindowEdgeCloseRacesEveryCall(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t)
	for round := range 6 {
		w, err := redislimit.NewWindow(c, "close-race", algorithms.Rate{Count: 50, Per: 200 * time.Millisecond})
		require.NoError(t, err)
		var wg sync.WaitGroup
		stop := make(chan struct{})
		ok := func(err error) bool {
			return err == nil || errors.Is(err, permits.ErrClosed) || errors.Is(err, permits.ErrRateLimited) ||
				errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
		}
		for k := range 6 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					ctx := context.Background()
					var cancel context.CancelFunc = func() {}
					if k%2 == 1 {
						ctx, cancel = context.WithTimeout(ctx, time.Duration(k)*10*time.Millisecond)
					}
					g, err := w.AcquireGrant(ctx, int64(1+k))
					cancel()
					if !ok(err) {
						t.Errorf("AcquireGrant: %v", err)
						return
					}
					if errors.Is(err, permits.ErrClosed) {
						return
					}
					if err == nil {
						switch k % 3 {
						case 0:
							if err := w.Settle(g, int64(k)); err != nil && !errors.Is(err, permits.ErrClosed) {
								t.Errorf("Settle: %v", err)
							}
						case 1:
							w.Refund(g)
						case 2:
							if err := w.Pause(time.Now().Add(time.Millisecond)); err != nil && !errors.Is(err, permits.ErrClosed) {
								t.Errorf("Pause: %v", err)
							}
						}
					}
					if _, err := w.TryAcquire(1); !ok(err) {
						t.Errorf("TryAcquire: %v", err)
					}
				}
			})
		}
		time.Sleep(time.Duration(20+round*15) * time.Millisecond)
		done := make(chan struct{})
		go func() { w.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("Close hangs; stats %+v", w.Stats())
		}
		fin := make(chan struct{})
		go func() { wg.Wait(); close(fin) }()
		select {
		case <-fin:
		case <-time.After(5 * time.Second):
			t.Fatalf("callers hang after Close; stats %+v", w.Stats())
		}
		close(stop)
		assert.Zero(t, w.Stats().Waiting)
	}
}
