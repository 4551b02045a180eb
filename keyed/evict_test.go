package keyed_test

import (
	"context"
	"fmt"
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

// counting wraps a constructor to count the algorithms it made, so that a
// test can tell a key made anew from one kept.
type counting struct {
	mu   sync.Mutex
	made map[string]int
	alg  func() (algorithms.Algorithm, error)
}

func (c *counting) new(key string) (algorithms.Algorithm, error) {
	c.mu.Lock()
	c.made[key]++
	c.mu.Unlock()
	return c.alg()
}

func (c *counting) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.made[key]
}

func TestAKeyBackToFullCapacityIsGoneAndBehavesAsNew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &counting{made: map[string]int{}, alg: func() (algorithms.Algorithm, error) {
			return algorithms.NewGCRA(algorithms.PerSecond(10), 5)
		}}
		l := newLimiter(t, c.new)
		for range 5 {
			_, err := l.TryAcquire("k", 1)
			require.NoError(t, err)
		}
		synctest.Wait()
		assert.Equal(t, 1, l.Stats().Keys)

		// Full again at 500ms: still live just before, gone by then.
		time.Sleep(499 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 1, l.Stats().Keys, "not yet full")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 0, l.Stats().Keys, "dropped the instant it is full")

		// It behaves as new: a full burst, made by the constructor again.
		for range 5 {
			_, err := l.TryAcquire("k", 1)
			require.NoError(t, err)
		}
		_, err := l.TryAcquire("k", 1)
		require.ErrorIs(t, err, permits.ErrRateLimited)
		assert.Equal(t, 2, c.count("k"))
	})
}

func TestAKeyInUseIsLookedAtAgainWhenItSaysItWillBeFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &counting{made: map[string]int{}, alg: func() (algorithms.Algorithm, error) {
			return algorithms.NewGCRA(algorithms.PerSecond(10), 5)
		}}
		l := newLimiter(t, c.new)
		// One request every 90ms at 10/s: each moves the TAT 100ms, so the
		// key is never full again while they come, the first looks at it
		// (at 100ms, 200ms, ...) find it in use, and it is made once.
		for range 40 {
			_, err := l.TryAcquire("k", 1)
			require.NoError(t, err)
			time.Sleep(90 * time.Millisecond)
			synctest.Wait()
			assert.Equal(t, 1, l.Stats().Keys)
		}
		assert.Equal(t, 1, c.count("k"), "never dropped while in use")
		// The 40th grant put the TAT at 4s: full then, and dropped within
		// the recheck interval (10ms).
		assert.Equal(t, t0.Add(3600*time.Millisecond), time.Now())
		time.Sleep(399 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 1, l.Stats().Keys)
		time.Sleep(11 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 0, l.Stats().Keys)
	})
}

func TestAWaitingKeyIsNeverDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &counting{made: map[string]int{}, alg: func() (algorithms.Algorithm, error) {
			return algorithms.NewGCRA(algorithms.PerSecond(1), 1)
		}}
		l := newLimiter(t, c.new)
		_, err := l.TryAcquire("k", 1)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		errs := make(chan error, 3)
		for range 3 {
			wg.Go(func() {
				_, err := l.Acquire(ctx, "k", 1)
				errs <- err
			})
			synctest.Wait()
		}
		// The head is granted at 1s, then two more; the key is never full
		// while they wait.
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 1, l.Stats().Keys)
		assert.Equal(t, 2, l.Stats().Waiting)
		cancel()
		wg.Wait()
		close(errs)
		var granted, canceled int
		for err := range errs {
			if err == nil {
				granted++
			} else {
				assert.ErrorIs(t, err, context.Canceled)
				canceled++
			}
		}
		assert.Equal(t, 1, granted)
		assert.Equal(t, 2, canceled)
		assert.Equal(t, 1, c.count("k"))
		// Granted at 1s: full again at 2s, then dropped.
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, 0, l.Stats().Keys)
	})
}

func TestAKeyFloodAgainstTheCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, gcraPer[string](algorithms.PerMinute(60), 10), keyed.WithMaxKeys(100), keyed.WithShards(4))
		var refused int
		for i := range 1000 {
			_, err := l.TryAcquire(fmt.Sprint("flood-", i), 1)
			if err != nil {
				require.ErrorIs(t, err, keyed.ErrTooManyKeys)
				assert.NotErrorIs(t, err, permits.ErrRateLimited)
				refused++
			}
		}
		assert.Equal(t, 900, refused)
		assert.Equal(t, 100, l.Stats().Keys)
		// Live keys are still served; a new key waits for room too.
		_, err := l.TryAcquire("flood-3", 1)
		assert.NoError(t, err)
		_, err = l.Acquire(context.Background(), "newcomer", 1)
		assert.ErrorIs(t, err, keyed.ErrTooManyKeys)
		// One unit at 1/s: every flood key but flood-3 (two units) is full
		// again a second later, dropped, and the room is back.
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, 1, l.Stats().Keys)
		_, err = l.TryAcquire("newcomer", 1)
		assert.NoError(t, err)
	})
}

func TestCreatingAKeyRacesWell(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &counting{made: map[string]int{}, alg: func() (algorithms.Algorithm, error) {
			return algorithms.NewGCRA(algorithms.PerHour(1), 50)
		}}
		l := newLimiter(t, c.new, keyed.WithMaxKeys(1))
		var wg sync.WaitGroup
		var mu sync.Mutex
		var ok int
		for range 100 {
			wg.Go(func() {
				if _, err := l.TryAcquire("k", 1); err == nil {
					mu.Lock()
					ok++
					mu.Unlock()
				} else {
					assert.ErrorIs(t, err, permits.ErrRateLimited)
				}
			})
		}
		wg.Wait()
		assert.Equal(t, 50, ok, "one state for the key: its burst, not one per racing creator")
		assert.Equal(t, 1, l.Stats().Keys)
	})
}

func TestIdleTimeoutKeepsAFullKeyForAWhile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &counting{made: map[string]int{}, alg: func() (algorithms.Algorithm, error) {
			return algorithms.NewGCRA(algorithms.PerSecond(10), 5)
		}}
		l := newLimiter(t, c.new, keyed.WithIdleTimeout(time.Second))
		_, err := l.TryAcquire("k", 1)
		require.NoError(t, err)
		// Full at 100ms, looked at again at 1.1s.
		time.Sleep(time.Second + 99*time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 1, l.Stats().Keys)
		_, err = l.TryAcquire("k", 1) // used again: the same key
		require.NoError(t, err)
		assert.Equal(t, 1, c.count("k"))
		// Found in use at 1.1s, full again at 1.199s: dropped at 2.199s.
		time.Sleep(time.Second + 99*time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 1, l.Stats().Keys)
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 0, l.Stats().Keys)
		_, err = keyed.New(c.new, keyed.WithIdleTimeout(-1))
		assert.ErrorIs(t, err, permits.ErrInvalidConfig)
	})
}
