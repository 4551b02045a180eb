package redislimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// A Pause that failed with ErrUnavailable was never applied: once Redis is
// back, a waiter is admitted as if there had been no pause, with a call or
// two, not after the pause Redis never heard of, through a storm of calls.
func TestWindowEdgeAFailedPauseHoldsNothing(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t, noRetries)
	w, err := redislimit.NewWindow(c, "pause-failed", algorithms.Rate{Count: 100, Per: time.Second}, redislimit.WithProbeInterval(0))
	require.NoError(t, err)
	defer w.Close()
	_, err = w.TryAcquire(1)
	require.NoError(t, err)
	s.Kill()
	require.ErrorIs(t, w.Pause(time.Now().Add(time.Second)), redislimit.ErrUnavailable)
	require.NoError(t, s.Restart())
	calls := w.Stats().Calls
	t0 := time.Now()
	_, err = w.TryAcquire(1)
	took := time.Since(t0)
	require.NoError(t, err)
	n := w.Stats().Calls - calls
	t.Logf("TryAcquire answered after %v, %d calls", took, n)
	assert.LessOrEqual(t, n, uint64(3), "script calls for one TryAcquire")
	calls = w.Stats().Calls
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	t0 = time.Now()
	_, err = w.Acquire(ctx, 1)
	took = time.Since(t0)
	require.NoError(t, err)
	n = w.Stats().Calls - calls
	t.Logf("granted after %v, %d calls", took, n)
	assert.LessOrEqual(t, n, uint64(3), "script calls for one Acquire")
}

// A pause Redis lost (a restart without persistence, a failover, the key
// deleted) leaves this process's waiters to be admitted by Redis, without a
// storm of calls: Redis admits them at once, the process sends them back
// for its own memory of the pause, Redis admits them again, and so on.
func TestWindowEdgeAPauseRedisLostCausesNoCallStorm(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t)
	w, err := redislimit.NewWindow(c, "pause-lost", algorithms.Rate{Count: 100, Per: time.Second})
	require.NoError(t, err)
	defer w.Close()
	_, err = w.TryAcquire(1)
	require.NoError(t, err)
	until := time.Now().Add(time.Second)
	require.NoError(t, w.Pause(until))
	require.NoError(t, c.Del(context.Background(), "pause-lost").Err(), "Redis lost the key")
	calls := w.Stats().Calls
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	t0 := time.Now()
	_, err = w.Acquire(ctx, 1)
	took := time.Since(t0)
	require.NoError(t, err)
	n := w.Stats().Calls - calls
	st := w.Stats()
	t.Logf("granted after %v, %d calls; stats %+v", took, n, st)
	assert.LessOrEqual(t, n, uint64(5), "script calls for one Acquire")
}

// A Pause that failed with ErrUnavailable takes nothing from a waiter
// holding a reservation: Redis holds its room, and it needs no call to be
// granted at its instant.
func TestWindowEdgeAFailedPauseTakesNoReservation(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t, noRetries)
	limit := algorithms.Rate{Count: 4, Per: 400 * time.Millisecond}
	w, err := redislimit.NewWindow(c, "pause-failed-res", limit, redislimit.WithProbeInterval(0))
	require.NoError(t, err)
	defer w.Close()
	_, err = w.TryAcquire(4)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reserved := make(chan error, 1)
	go func() { _, err := w.Acquire(ctx, 2); reserved <- err }()
	for w.Stats().Decided < 2 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // its answer applied: reserved at 400ms
	s.Kill()
	require.ErrorIs(t, w.Pause(time.Now().Add(time.Second)), redislimit.ErrUnavailable)
	assert.NoError(t, <-reserved, "the failed pause failed the reserved waiter")
}
