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
)

// TestACellKeyCostsItsSlot: a cell key nobody waits on has no entry, and
// the tables stay between 4/7 and 4/5 full, so a key costs at most 28
// bytes of table (16 / (4/7)), whatever the number of keys.
func TestACellKeyCostsItsSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, gcraPer[int](algorithms.PerHour(1), 10), keyed.WithShards(4))
		made := 0
		for _, n := range []int{1_000, 5_000, 20_000, 77_777} {
			for ; made < n; made++ {
				_, err := l.TryAcquire(made, 1)
				require.NoError(t, err)
			}
			perKey := float64(keyed.TableSlots(l)) * float64(keyed.SlotSize) / float64(n)
			assert.LessOrEqual(t, perKey, 28.5, "%d keys", n)
			assert.GreaterOrEqual(t, perKey, 16/0.8-0.5, "%d keys", n)
			assert.Equal(t, 0, keyed.Entries(l), "no key needed an entry")
		}
	})
}

// TestALargeTableIsSweptWithinItsGap: the owner of a large table passes
// over it no more often than every 2µs a slot (SlotGap), and drops its idle keys
// within about that long of the instant they are idle, never before; its
// memory (table and entries) goes back to the first size.
func TestALargeTableIsSweptWithinItsGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 40_000
		l := newLimiter(t, gcraPer[int](algorithms.PerSecond(10), 1), keyed.WithShards(1))
		empty := keyed.TableSlots(l)
		for i := range n {
			_, err := l.TryAcquire(i, 1)
			require.NoError(t, err)
		}
		gap := time.Duration(keyed.TableSlots(l)) * keyed.SlotGap
		require.Greater(t, gap, 20*time.Millisecond, "a table large enough to pace its passes")
		time.Sleep(99 * time.Millisecond) // full at 100ms
		synctest.Wait()
		assert.Equal(t, n, l.Stats().Keys, "none idle yet")
		time.Sleep(time.Millisecond + gap)
		synctest.Wait()
		assert.Equal(t, 0, l.Stats().Keys, "all dropped within the gap")
		assert.Equal(t, empty, keyed.TableSlots(l))
		assert.Equal(t, 0, keyed.Entries(l))
	})
}

// TestAWaitingKeyIsNeverSwept: while a key has waiters, the passes that
// drop other keys around it (made and gone idle all the while) leave it
// alone, and its waiters are granted in order at their instants; once the
// last is granted and the key is full again it is dropped like any other.
func TestAWaitingKeyIsNeverSwept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &counting{made: map[string]int{}, alg: func() (algorithms.Algorithm, error) {
			return algorithms.NewGCRA(algorithms.PerSecond(1), 1)
		}}
		l := newLimiter(t, c.new, keyed.WithShards(1))
		_, err := l.TryAcquire("w", 1)
		require.NoError(t, err)
		var wg sync.WaitGroup
		g := newGrants()
		queue(&wg, l, "w", g, seq(0, 4), nil, 1, 1, 1, 1)
		for i := range 90 { // one new key every 50ms, each idle a second later
			_, err := l.TryAcquire(fmt.Sprint("other-", i), 1)
			require.NoError(t, err)
			time.Sleep(50 * time.Millisecond)
			synctest.Wait()
			if i < 70 {
				require.True(t, keyed.HasEntry(l, "w"), "at %d: the waiting key is live, with its entry", i)
			}
		}
		wg.Wait()
		assert.Equal(t, []int{0, 1, 2, 3}, g.order)
		for i := range 4 {
			assert.Equal(t, t0.Add(time.Duration(i+1)*time.Second), g.at[i], "waiter %d", i)
		}
		assert.Equal(t, 1, c.count("w"), "never dropped")
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, 0, l.Stats().Keys)
		assert.Equal(t, 0, keyed.Entries(l))
	})
}

// TestAnIdleTimeoutBeyondWhatCellsRememberStillDropsKeys: a cell cannot
// tell since when it has been full further back than its shard's origin,
// which lies at least half a generation's range back (about a second at
// the finest rates, days or decades at common ones). A key found full
// since before it counts as idle whatever the timeout, so that a timeout
// longer than that never keeps a key forever, however often the owner
// passes (here for a busy key beside it, every 100ms) while the origin
// moves: it is dropped sooner than its timeout instead. A key that is
// foretold its instant is dropped at its timeout.
func TestAnIdleTimeoutBeyondWhatCellsRememberStillDropsKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rate := algorithms.Rate{Count: 1_000_000_007, Per: 1_000_000 * time.Second} // generations of about half a second
		l := newLimiter(t, gcraPer[string](rate, 3), keyed.WithIdleTimeout(time.Hour), keyed.WithShards(1))
		_, err := l.TryAcquire("k", 1)
		require.NoError(t, err)
		for range 100 {
			_, err := l.TryAcquire("busy", 1)
			require.NoError(t, err)
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
		}
		assert.Greater(t, keyed.Generations(l), uint64(4), "the origin moved")
		assert.Equal(t, 1, l.Stats().Keys, "k dropped, before its timeout; busy kept")
		time.Sleep(time.Hour + time.Second)
		synctest.Wait()
		assert.Equal(t, 0, l.Stats().Keys, "busy dropped at its timeout")
	})
}

// TestRebuildsAndMovesNeverLoseAnAdmission is TestEvictionNeverLosesAnAdmission
// over enough keys that the shards' tables grow and shrink in every spell,
// and Acquires move cells into entries and back, while fast-path callers
// decide on the slots being copied, moved and retired.
func TestRebuildsAndMovesNeverLoseAnAdmission(t *testing.T) {
	const (
		burst = 3
		rate  = 2000 // per second
	)
	hammerKeys(t, 64, func(int) (algorithms.Algorithm, error) {
		return algorithms.NewGCRA(algorithms.PerSecond(rate), burst)
	}, func(int) (int64, float64) { return burst, rate }, nil)
}

// TestCloseFailsAWaiterWhoseKeyHasAnEntry: Close finds every waiter in the
// side map.
func TestCloseFailsAWaiterWhoseKeyHasAnEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := keyed.New(gcraPer[string](algorithms.PerHour(1), 1))
		require.NoError(t, err)
		_, err = l.TryAcquire("k", 1)
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() {
			_, err := l.Acquire(context.Background(), "k", 1)
			done <- err
		}()
		synctest.Wait()
		require.NoError(t, l.Close())
		assert.Error(t, <-done)
	})
}
