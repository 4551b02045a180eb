package redislimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// A stopped server: every call fails quickly with ErrUnavailable, a
// reservation already made is still granted at its instant, and the
// window works again once the server is back.
func TestWindowEdgeStoppedServerFailsClosedQuicklyAndRecovers(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t, noRetries)
	limit := algorithms.Rate{Count: 4, Per: 400 * time.Millisecond}
	// A call timeout far longer than the test: failing closed on a
	// refused connection must not wait for it (see waitedForRedis).
	w, err := redislimit.NewWindow(c, "stopped", limit, redislimit.WithProbeInterval(0), redislimit.WithCallTimeout(3*waitedForRedis))
	require.NoError(t, err)
	defer w.Close()
	ctx := context.Background()
	g, err := w.TryAcquireGrant(4)
	require.NoError(t, err)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	reserved := make(chan error, 1)
	go func() { _, err := w.Acquire(cctx, 2); reserved <- err }()
	for w.Stats().Decided < 2 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // its answer applied
	s.Kill()
	t0 := time.Now()
	_, err = w.TryAcquire(1)
	assert.ErrorIs(t, err, permits.ErrRateLimited, "FIFO: behind this process's waiter")
	_, err = w.Acquire(ctx, 1)
	assert.ErrorIs(t, err, redislimit.ErrUnavailable, "%v", err)
	_, err = w.AcquireGrant(cctx, 1)
	assert.ErrorIs(t, err, redislimit.ErrUnavailable)
	assert.ErrorIs(t, w.Settle(g, 1), redislimit.ErrUnavailable)
	assert.False(t, w.Refund(g))
	assert.Less(t, time.Since(t0), waitedForRedis, "fails at once, not at the call timeout")
	if err := <-reserved; err != nil {
		// Documented: a call of unknown outcome that asked the reservation
		// to move fails its waiter.
		var ue *redislimit.UnavailableError
		require.ErrorAs(t, err, &ue)
		assert.True(t, ue.Unknown, "%v", err)
	}
	_, err = w.TryAcquire(1)
	assert.ErrorIs(t, err, redislimit.ErrUnavailable)
	assert.NotErrorIs(t, err, permits.ErrRateLimited)
	// (A failed Pause before the reservation falls due fails its waiter:
	// TestWindowEdgeAFailedPauseTakesNoReservation.)
	t1 := time.Now()
	assert.ErrorIs(t, w.Pause(time.Now().Add(time.Millisecond)), redislimit.ErrUnavailable)
	assert.Less(t, time.Since(t1), waitedForRedis, "fails at once, not at the call timeout")

	require.NoError(t, s.Restart())
	_, err = w.TryAcquire(4)
	require.NoError(t, err, "the restarted server has an empty window")
	_, err = w.TryAcquire(1)
	var rl *permits.RateLimitError
	require.ErrorAs(t, err, &rl)
	assert.LessOrEqual(t, rl.RetryAfter, limit.Per)
	st := w.Stats()
	assert.GreaterOrEqual(t, st.Unavailable, uint64(3), "the acquisitions")
	assert.Zero(t, st.Waiting)
}

// With WithFailOpen, a Window falls back to a local window of its share;
// a grant of the local window is not the Window's to settle.
func TestWindowEdgeFailOpenShare(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t, noRetries)
	limit := algorithms.Rate{Count: 1 << 50, Per: time.Minute}
	w, err := redislimit.NewWindow(c, "open-share", limit, redislimit.WithFailOpen(1<<40, 1<<41), redislimit.WithProbeInterval(0))
	require.NoError(t, err)
	defer w.Close()
	small, err := redislimit.NewWindow(c, "open-small", algorithms.Rate{Count: 10, Per: time.Minute}, redislimit.WithFailOpen(1, 2), redislimit.WithProbeInterval(0))
	require.NoError(t, err)
	defer small.Close()
	s.Kill()
	g, err := small.TryAcquireGrant(5)
	require.NoError(t, err, "half of 10")
	assert.ErrorIs(t, small.Settle(g, 0), permits.ErrUnknownGrant, "the local window's grant")
	assert.False(t, small.Refund(g))
	_, err = small.TryAcquire(1)
	assert.ErrorIs(t, err, permits.ErrRateLimited)
	_, err = small.TryAcquire(6)
	assert.ErrorIs(t, err, redislimit.ErrUnavailable, "above the share")

	_, err = w.TryAcquire(1 << 48)
	assert.NoError(t, err, "a quarter of the limit fits in a share of half")
}
