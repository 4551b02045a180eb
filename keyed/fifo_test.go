package keyed_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// gcra10 is 10 a second with bursts of 2: one unit every 100ms.
func gcra10(string) (algorithms.Algorithm, error) {
	return algorithms.NewGCRA(algorithms.PerSecond(10), 2)
}

// retryAfter returns err's RetryAfter, failing unless err is a refusal by
// the limit.
func retryAfter(t *testing.T, err error) time.Duration {
	t.Helper()
	require.ErrorIs(t, err, permits.ErrRateLimited)
	wait, ok := permits.RetryAfter(err)
	require.True(t, ok)
	return wait
}

// An Acquire denied on its slot's cell without a lock reaches the owner
// only after the write lock (to promote the key); until then a TryAcquire
// that comes after it must not take the units it waits for. The denial
// closes the gate in the same step, so the TryAcquire is refused behind it,
// told the wait of its unit behind the Acquire's two (200ms: the
// Acquire's cost counted, see closer.go), and the Acquire is granted when
// its own units are there (100ms), not after the TryAcquire's (200ms).
func TestTryAcquireAfterADeniedAcquireWaitsBehindIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tryErr error
		var l *keyed.Limiter[string]
		l = newLimiter(t, gcra10, keyed.WithShards(1), keyed.WithClosedHook(func() {
			assert.False(t, keyed.FastPath(l, "k"), "the denial closed the gate")
			_, tryErr = l.TryAcquire("k", 1) // 1 unit is left, the Acquire's 2 are due at 100ms
		}))
		_, err := l.TryAcquire("k", 1)
		require.NoError(t, err)

		_, err = l.Acquire(context.Background(), "k", 2)
		require.NoError(t, err)
		assert.Equal(t, t0.Add(100*time.Millisecond), time.Now(), "the Acquire is granted when its units are there")
		assert.Equal(t, 200*time.Millisecond, retryAfter(t, tryErr), "refused behind the Acquire: its units come first")

		// The Acquire took its 2 at 100ms: 1 more is due at 200ms.
		_, err = l.TryAcquire("k", 1)
		assert.Equal(t, 100*time.Millisecond, retryAfter(t, err))
		synctest.Wait()
		assert.True(t, keyed.FastPath(l, "k"), "the owner reopened the gate with its answer")
		assert.False(t, keyed.HasEntry(l, "k"), "and gave the entry back")
		assert.Equal(t, keyed.Stats{Stats: permits.Stats{Granted: 2, Rejected: 2}, Keys: 1}, l.Stats())
	})
}

// The reviewer's repro, in a bubble: the write lock held (a sweep chunk, a
// rebuild, another key's creation) while an Acquire is denied without a
// lock and a TryAcquire starts after it. Whichever takes the lock first,
// the TryAcquire is refused and the Acquire granted at 100ms.
func TestTryAcquireAfterADeniedAcquireWaitsBehindItBehindTheLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		denied := make(chan struct{})
		l := newLimiter(t, gcra10, keyed.WithShards(1), keyed.WithClosedHook(func() { close(denied) }))
		_, err := l.TryAcquire("k", 1)
		require.NoError(t, err)
		var wg sync.WaitGroup
		var acqErr, tryErr error
		var acqAt time.Time
		keyed.WhileLocked(l, "k", func() {
			wg.Go(func() {
				_, acqErr = l.Acquire(context.Background(), "k", 2)
				acqAt = time.Now()
			})
			<-denied
			wg.Go(func() { _, tryErr = l.TryAcquire("k", 1) })
		})
		wg.Wait()
		require.NoError(t, acqErr)
		assert.Equal(t, t0.Add(100*time.Millisecond), acqAt)
		wait := retryAfter(t, tryErr)
		assert.GreaterOrEqual(t, wait, 100*time.Millisecond, "at least until the Acquire's units are there")
		assert.LessOrEqual(t, wait, 200*time.Millisecond, "at most until its own are, behind it")
	})
}

// The gate an Acquire closed without a lock moves with its cell: a rebuild
// of the table copies it closed, and the sweep never drops the key while
// it is closed (its cell full since long ago), so that the Acquire finds
// its key, and its state, when it gets to the owner.
func TestAGateClosedWithoutALockOutlivesRebuildsAndSweeps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tryErr error
		var l *keyed.Limiter[string]
		l = newLimiter(t, gcra10, keyed.WithShards(1), keyed.WithIdleTimeout(time.Second),
			keyed.WithClosedHook(func() {
				slots := keyed.TableSlots(l)
				for i := range 100 {
					_, err := l.TryAcquire("other-"+strconv.Itoa(i), 1)
					require.NoError(t, err)
				}
				assert.Greater(t, keyed.TableSlots(l), slots, "the table was rebuilt")
				time.Sleep(time.Minute) // every pass meanwhile finds k full, idle and gated
				assert.True(t, keyed.Gated(l, "k"))
				assert.Equal(t, 1, l.Stats().Keys, "only k, kept while gated")
				_, tryErr = l.TryAcquire("k", 2)
			}))
		_, err := l.TryAcquire("k", 1)
		require.NoError(t, err)
		_, err = l.Acquire(context.Background(), "k", 2) // arrived at t0, granted as soon as it gets to the owner
		require.NoError(t, err)
		assert.Equal(t, t0.Add(time.Minute), time.Now())
		assert.Positive(t, retryAfter(t, tryErr))
		synctest.Wait()
		assert.False(t, keyed.Gated(l, "k"))
		assert.Equal(t, 0, l.Stats().Keys, "k, full since long ago, dropped once its gate reopened")
	})
}

// No key stays gated once the Acquire that closed its gate without a lock
// fails: its deadline comes before its wait, its context ends, or its cost
// no longer fits (a SetBurst meanwhile). Each reaches the owner, which
// reopens the gate; the key is then decided without a lock again, and
// dropped once idle (a gated cell never is).
func TestAGateClosedByAFailedAcquireIsReopened(t *testing.T) {
	for _, c := range []struct {
		name string
		// during runs while the Acquire is between its denial and the
		// owner; ctx is the Acquire's.
		ctx    func() (context.Context, context.CancelFunc)
		during func(t *testing.T, l *keyed.Limiter[string], cancel context.CancelFunc)
		check  func(t *testing.T, err error)
	}{
		{
			name: "deadline before its wait",
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 50*time.Millisecond)
			},
			check: func(t *testing.T, err error) {
				assert.ErrorIs(t, err, permits.ErrRateLimited)
				assert.ErrorIs(t, err, context.DeadlineExceeded)
			},
		},
		{
			name: "context canceled",
			ctx:  func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			during: func(t *testing.T, l *keyed.Limiter[string], cancel context.CancelFunc) {
				cancel()
			},
			check: func(t *testing.T, err error) { assert.ErrorIs(t, err, context.Canceled) },
		},
		{
			name: "cost no longer fits",
			ctx:  func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			during: func(t *testing.T, l *keyed.Limiter[string], cancel context.CancelFunc) {
				require.NoError(t, l.SetBurst("k", 1))
			},
			check: func(t *testing.T, err error) { assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity) },
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := c.ctx()
				defer cancel()
				var l *keyed.Limiter[string]
				l = newLimiter(t, gcra10, keyed.WithShards(1), keyed.WithIdleTimeout(time.Second),
					keyed.WithClosedHook(func() {
						assert.True(t, keyed.Gated(l, "k"))
						if c.during != nil {
							c.during(t, l, cancel)
						}
					}))
				_, err := l.TryAcquire("k", 1)
				require.NoError(t, err)
				_, err = l.Acquire(ctx, "k", 2)
				c.check(t, err)
				synctest.Wait()
				assert.False(t, keyed.Gated(l, "k"), "reopened")
				assert.True(t, keyed.FastPath(l, "k"), "decided without a lock again")
				time.Sleep(time.Minute)
				synctest.Wait()
				assert.Equal(t, 0, l.Stats().Keys, "dropped once idle")
			})
		})
	}
}

// A caller answered by the owner finds its key as the answer left it: the
// grant that emptied the key's queue has reopened its gate, so the
// caller's next TryAcquire is decided on the key's state, not refused
// behind a queue that is gone. (The owner signals its answers only once
// it has settled the key; woken before that, a caller raced the owner's
// bookkeeping and lost a few times in a thousand.)
func TestAnAnsweredCallerFindsItsKeySettled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, gcra10, keyed.WithShards(1))
		for i := range 3000 {
			key := strconv.Itoa(i)
			for range 2 {
				_, err := l.TryAcquire(key, 1)
				require.NoError(t, err)
			}
			_, err := l.Acquire(context.Background(), key, 1) // granted at +100ms, by the owner's timer
			require.NoError(t, err)
			require.True(t, keyed.FastPath(l, key), "round %d: the gate is open when the waiter returns", i)
			_, err = l.TryAcquire(key, 1)
			require.Equal(t, 100*time.Millisecond, retryAfter(t, err), "round %d: refused on the key's state", i)
		}
	})
}
