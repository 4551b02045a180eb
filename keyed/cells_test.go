package keyed_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

func TestASlotIsSmall(t *testing.T) {
	// A cell key without waiters is its slot alone: the key's hash and its
	// cell, no key, no entry, no place in any schedule.
	assert.Equal(t, uintptr(16), keyed.SlotSize)
}

func TestKeysOfTheSharedConfigurationAreCellsAndOthersKeepTheirAlgorithm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, func(key string) (algorithms.Algorithm, error) {
			switch key {
			case "window":
				return algorithms.NewSlidingWindow(algorithms.PerSecond(2))
			case "vip":
				return algorithms.NewGCRA(algorithms.PerSecond(10), 50)
			case "bucket":
				return algorithms.NewTokenBucket(algorithms.PerSecond(10), 5)
			}
			return algorithms.NewGCRA(algorithms.PerSecond(10), 5)
		})
		// The first algorithm that can teach the configuration is made for
		// the second key: a sliding window cannot.
		burst := func(key string) int {
			n := 0
			for {
				if _, err := l.TryAcquire(key, 1); err != nil {
					require.ErrorIs(t, err, permits.ErrRateLimited)
					return n
				}
				n++
			}
		}
		assert.Equal(t, 2, burst("window"))
		assert.Equal(t, 5, burst("alice"))
		assert.Equal(t, 50, burst("vip"))
		assert.Equal(t, 5, burst("bucket"))
		assert.False(t, keyed.IsCell(l, "window"))
		assert.True(t, keyed.IsCell(l, "alice"))
		assert.False(t, keyed.IsCell(l, "vip"), "another burst: its own GCRA")
		assert.True(t, keyed.IsCell(l, "bucket"), "the same rate and capacity admit alike")

		// Each tells its own quota.
		_, q, err := l.TryAcquireQuota("vip", 1)
		require.ErrorIs(t, err, permits.ErrRateLimited)
		assert.Equal(t, permits.Quota{Limit: 50, Reset: 5 * time.Second, RetryAfter: 100 * time.Millisecond, Window: 5 * time.Second}, q)
		_, q, err = l.TryAcquireQuota("alice", 1)
		require.ErrorIs(t, err, permits.ErrRateLimited)
		assert.Equal(t, permits.Quota{Limit: 5, Reset: 500 * time.Millisecond, RetryAfter: 100 * time.Millisecond, Window: 500 * time.Millisecond}, q)
		_, err = l.TryAcquire("alice", 6)
		assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity)
		_, err = l.TryAcquire("vip", 6)
		assert.ErrorIs(t, err, permits.ErrRateLimited, "vip's capacity is 50")

		// A cell key waits in FIFO order like any other.
		var wg sync.WaitGroup
		g := newGrants()
		queue(&wg, l, "alice", g, seq(0, 3), nil, 2, 1, 1)
		wg.Wait()
		assert.Equal(t, []int{0, 1, 2}, g.order)
		assert.Equal(t, t0.Add(200*time.Millisecond), g.at[0])
		assert.Equal(t, t0.Add(300*time.Millisecond), g.at[1])
		assert.Equal(t, t0.Add(400*time.Millisecond), g.at[2])
	})
}

// TestTheFastPathOfACellKeyTakesNoLock decides on a live cell key while
// its shard's write lock is held, on the same goroutine: any lock the fast
// path took would deadlock.
func TestTheFastPathOfACellKeyTakesNoLock(t *testing.T) {
	l := newLimiter(t, gcraPer[string](algorithms.PerHour(1), 3))
	_, err := l.TryAcquire("k", 1)
	require.NoError(t, err)
	require.True(t, keyed.IsCell(l, "k"))
	keyed.WhileLocked(l, "k", func() {
		_, err := l.TryAcquire("k", 1)
		assert.NoError(t, err)
		_, q, err := l.TryAcquireQuota("k", 1)
		assert.NoError(t, err)
		assert.Equal(t, int64(0), q.Remaining)
		_, err = l.TryAcquire("k", 1)
		assert.ErrorIs(t, err, permits.ErrRateLimited)
		_, err = l.Acquire(context.Background(), "k", 4)
		assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity)
	})
}

// TestCellKeysStayExactWhileTheirOriginMoves plays the property test's
// scripts a thousand times slower, over minutes, at a rate whose ticks are
// so fine (10^-9 ns) that a generation of the shards' cells counts about two
// seconds: the owners move the origin and refresh every cell hundreds of
// times, while keys wait, go idle for many generations (kept live for a
// minute after they are full) and come back. Every outcome must still be the one
// of an actor.Limiter per key, owning a GCRA.
func TestCellKeysStayExactWhileTheirOriginMoves(t *testing.T) {
	rate := algorithms.Rate{Count: 1_000_000_007, Per: 1_000_000 * time.Second} // about 1000 per second
	make := func() algorithms.Algorithm {
		g, _ := algorithms.NewGCRA(rate, 3)
		return g
	}
	seeds := testutil.Volume(20, 1000)
	var decisions int64
	var generations uint64
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		evs := script(rand.New(rand.NewPCG(seed, 34)), 3, 3)
		decisions += int64(len(evs))
		for i := range evs {
			evs[i].at *= 1000
			evs[i].deadline *= 1000
		}
		var l *keyed.Limiter[int]
		got, gotTries := play(t, func() subject {
			var err error
			l, err = keyed.New(func(int) (algorithms.Algorithm, error) { return make(), nil }, keyed.WithShards(2), keyed.WithIdleTimeout(time.Minute))
			require.NoError(t, err)
			return l
		}, evs)
		generations += keyed.Generations(l)
		want, wantTries := play(t, func() subject {
			return &perKey{make: make, lims: map[int]*actor.Limiter{}}
		}, evs)
		for id, w := range want {
			if got[id] != w {
				t.Fatalf("seed %d: arrival %d: keyed %+v, actor %+v", seed, id, got[id], w)
			}
		}
		require.Len(t, gotTries, len(wantTries))
		for i, w := range wantTries {
			if g := gotTries[i]; g.granted != w.granted || g.err != w.err || g.at < w.at {
				t.Fatalf("seed %d: TryAcquire %d: keyed %+v, actor %+v", seed, i, g, w)
			}
		}
	}
	t.Logf("%d generations over %d scripts", generations, seeds)
	testutil.ReportDecisions(t, decisions)
	require.Greater(t, generations, uint64(seeds*20), "the origin moved")
}

// TestIdleKeysGiveTheirTablesBack makes a burst of keys, lets them go idle,
// and checks that the shards' tables are back to their first size.
func TestIdleKeysGiveTheirTablesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, gcraPer[string](algorithms.PerSecond(10), 1), keyed.WithShards(4))
		empty := keyed.TableSlots(l)
		for i := range 20_000 {
			_, err := l.TryAcquire(fmt.Sprint("k", i), 1)
			require.NoError(t, err)
		}
		assert.Equal(t, 20_000, l.Stats().Keys)
		assert.Greater(t, keyed.TableSlots(l), 20_000)
		// Full at 100ms, dropped within its shard's pass gap (see
		// TestALargeTableIsSweptWithinItsGap): about 17ms at 8 700 slots.
		time.Sleep(100*time.Millisecond + time.Duration(keyed.TableSlots(l)/4)*keyed.SlotGap)
		synctest.Wait()
		assert.Equal(t, 0, l.Stats().Keys)
		assert.Equal(t, empty, keyed.TableSlots(l))
	})
}

// TestAPinnedKeyIsNeverDropped: a caller that pinned a key is on its way
// to the owner. The owner's passes leave the key alone, with its state,
// until its request is served, even long after it is full.
func TestAPinnedKeyIsNeverDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &counting{made: map[string]int{}, alg: func() (algorithms.Algorithm, error) {
			return algorithms.NewGCRA(algorithms.PerSecond(10), 1)
		}}
		l := newLimiter(t, c.new)
		_, err := l.TryAcquire("k", 1)
		require.NoError(t, err)
		e := keyed.Pinned(l, "k")
		time.Sleep(time.Second) // full at 100ms, and swept many times since
		synctest.Wait()
		assert.Equal(t, 1, l.Stats().Keys, "the pinned key stays")
		require.NoError(t, keyed.SendPinned(l, e, 1), "the pinned request reaches the owner and is granted")
		_, err = l.TryAcquire("k", 1)
		require.ErrorIs(t, err, permits.ErrRateLimited, "the same state: its one unit is taken")
		assert.Equal(t, 1, c.count("k"), "never made anew")
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 0, l.Stats().Keys, "dropped once full again with nothing pinned")
		assert.Equal(t, 0, keyed.Entries(l))
	})
}

// TestACallerOnADroppedKeysSlotLooksAgain: a caller that found a key's
// slot without a lock, and decides on its cell just after the owner
// retired it to drop the key, decides nothing (the cell is not open) and
// looks again; the key is gone, and its next look makes it anew.
func TestACallerOnADroppedKeysSlotLooksAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &counting{made: map[string]int{}, alg: func() (algorithms.Algorithm, error) {
			return algorithms.NewGCRA(algorithms.PerSecond(10), 1)
		}}
		var lim atomic.Pointer[keyed.Limiter[string]]
		open := make(chan bool, 1)
		var once sync.Once
		l := newLimiter(t, c.new, keyed.WithRetiredHook(func(sl any) {
			once.Do(func() {
				_, o := keyed.DecideOnSlot(lim.Load(), sl, 1)
				open <- o
			})
		}))
		lim.Store(l)
		_, err := l.TryAcquire("k", 1)
		require.NoError(t, err)
		stale := keyed.Slot(l, "k")
		require.NotNil(t, stale)
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		select {
		case o := <-open:
			assert.False(t, o, "the retired cell decides nothing")
		default:
			t.Fatal("the owner never retired the full key")
		}
		assert.Equal(t, 0, l.Stats().Keys)
		_, o := keyed.DecideOnSlot(l, stale, 1)
		assert.False(t, o, "nor later: a dropped key's slot is never given to another")
		_, err = l.TryAcquire("k", 1)
		require.NoError(t, err)
		assert.Equal(t, 2, c.count("k"), "made anew")
		_, o = keyed.DecideOnSlot(l, stale, 1)
		assert.False(t, o, "the new key has a slot of its own")
	})
}

// TestACallerOnASlotCopiedByARebuildLooksAgain: a caller that found a
// key's slot without a lock may decide on it after a new key made the
// table grow. The rebuild retired the old cell as it copied it, so the
// caller decides nothing there and looks again, and the key keeps its
// state, every admission made before the copy in it.
func TestACallerOnASlotCopiedByARebuildLooksAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, gcraPer[string](algorithms.PerHour(1), 3), keyed.WithShards(1))
		_, err := l.TryAcquire("k", 1)
		require.NoError(t, err)
		stale := keyed.Slot(l, "k")
		before := keyed.TableSlots(l)
		for i := 0; keyed.TableSlots(l) == before; i++ {
			_, err := l.TryAcquire(fmt.Sprint("other-", i), 1)
			require.NoError(t, err)
		}
		_, open := keyed.DecideOnSlot(l, stale, 1)
		assert.False(t, open, "the copied cell decides nothing")
		for range 2 {
			_, err := l.TryAcquire("k", 1)
			require.NoError(t, err, "the two units the key had left")
		}
		_, err = l.TryAcquire("k", 1)
		assert.ErrorIs(t, err, permits.ErrRateLimited)
	})
}

// TestACallerOnASlotWhoseKeyGotAnEntryLooksAgain: a caller that found a
// cell key's slot without a lock may decide on it after another request
// gave the key an entry (here an Acquire that waits). The cell moved into
// the entry, the slot's was retired first: the caller decides nothing and
// looks again, behind the waiter. Once nobody waits and nothing of the
// key is at the owner, the owner gives the entry back at once and the
// fast path is lock-free on the slot again.
func TestACallerOnASlotWhoseKeyGotAnEntryLooksAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, gcraPer[string](algorithms.PerSecond(10), 1), keyed.WithIdleTimeout(time.Hour))
		_, err := l.TryAcquire("k", 1)
		require.NoError(t, err)
		stale := keyed.Slot(l, "k")
		var wg sync.WaitGroup
		wg.Go(func() {
			_, err := l.Acquire(context.Background(), "k", 1)
			assert.NoError(t, err)
		})
		synctest.Wait()
		require.True(t, keyed.HasEntry(l, "k"))
		_, open := keyed.DecideOnSlot(l, stale, 1)
		assert.False(t, open, "the moved cell decides nothing")
		_, err = l.TryAcquire("k", 1)
		wait, ok := permits.RetryAfter(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, 100*time.Millisecond, wait, "until the waiter is granted")
		wg.Wait()
		synctest.Wait()
		assert.False(t, keyed.HasEntry(l, "k"), "the entry given back with the last waiter")
		assert.True(t, keyed.IsCell(l, "k"))
		keyed.WhileLocked(l, "k", func() {
			_, err := l.TryAcquire("k", 1)
			assert.ErrorIs(t, err, permits.ErrRateLimited, "decided without a lock: the waiter took the unit")
		})
		time.Sleep(100 * time.Millisecond) // the waiter's unit, granted at 100ms, back at 200ms
		_, err = l.TryAcquire("k", 1)
		assert.NoError(t, err, "the same state, lock-free")
	})
}
