package keyed_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/keyed"
)

// TestEvictionNeverLosesAnAdmission hammers a few keys whose state is full
// again a millisecond after each use, with pauses, so that the owners drop
// and remake them all the time while fast-path callers decide on them. A
// key is dropped only when full and an admission is never made on a key
// being dropped, so each key's grants over the run stay within its bound,
// burst + rate·elapsed, however often it was remade.
func TestEvictionNeverLosesAnAdmission(t *testing.T) {
	const (
		burst = 3
		rate  = 2000 // per second
	)
	hammer(t, func(int) (algorithms.Algorithm, error) {
		return algorithms.NewGCRA(algorithms.PerSecond(rate), burst)
	}, func(int) (int64, float64) { return burst, rate }, nil)
}

// TestEvictionNeverLosesAnAdmissionOfKeysWithTheirOwnAlgorithm does the
// same with two configurations: the keys of the first one the limiter sees
// are cells, the others keep their own GCRA, decided on under the shard's
// read lock and dropped under its write lock.
func TestEvictionNeverLosesAnAdmissionOfKeysWithTheirOwnAlgorithm(t *testing.T) {
	config := func(k int) (int64, float64) {
		if k%2 == 0 {
			return 3, 2000
		}
		return 2, 1500
	}
	hammer(t, func(k int) (algorithms.Algorithm, error) {
		burst, rate := config(k)
		return algorithms.NewGCRA(algorithms.PerSecond(int64(rate)), burst)
	}, config, nil)
}

// admission is one grant of a key, within the call that began and ended
// at these instants since the start of the run.
type admission struct {
	key          int
	began, ended time.Duration
}

// hammer runs the callers, and beside them, if it is not nil, one more
// goroutine that keeps to the same pauses.
func hammer(t *testing.T, newAlg func(int) (algorithms.Algorithm, error), limit func(key int) (burst int64, rate float64),
	beside func(l *keyed.Limiter[int], keys int, rng *rand.Rand, pause func(*rand.Rand) bool)) {
	hammerKeys(t, 8, newAlg, limit, beside)
}

// hammerKeys is hammer over the given number of keys.
func hammerKeys(t *testing.T, keys int, newAlg func(int) (algorithms.Algorithm, error), limit func(key int) (burst int64, rate float64),
	beside func(l *keyed.Limiter[int], keys int, rng *rand.Rand, pause func(*rand.Rand) bool)) {
	synctest.Test(t, func(t *testing.T) { hammerBubble(t, keys, newAlg, limit, beside) })
}

// hammerBubble is hammerKeys in a synctest bubble: the callers run on real
// goroutines, in parallel, in every interleaving the scheduler makes, but
// the clock moves only when all of them sleep, so the run's 300 ms, its
// pauses and the bounds are the same on any machine, however busy: a key
// is asked for more than its rate in every busy spell, and the progress
// checks below hold at any speed.
func hammerBubble(t *testing.T, keys int, newAlg func(int) (algorithms.Algorithm, error), limit func(key int) (burst int64, rate float64),
	beside func(l *keyed.Limiter[int], keys int, rng *rand.Rand, pause func(*rand.Rand) bool)) {
	var made atomic.Int64
	l := newLimiter(t, func(k int) (algorithms.Algorithm, error) {
		made.Add(1)
		return newAlg(k)
	}, keyed.WithShards(2))
	granted := make([]atomic.Int64, keys)
	start := time.Now()
	// pause makes every goroutine pause for 25ms every 40ms, so that every
	// key goes idle and is dropped, and some pause at random besides; it
	// reports false once the run is over.
	pause := func(rng *rand.Rand) bool {
		if phase := time.Since(start) % (40 * time.Millisecond); phase >= 15*time.Millisecond {
			time.Sleep(40*time.Millisecond - phase)
		} else if rng.IntN(50) == 0 {
			time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
		}
		return time.Since(start) < 300*time.Millisecond
	}
	var wg sync.WaitGroup
	if beside != nil {
		wg.Go(func() { beside(l, keys, rand.New(rand.NewPCG(99, 1)), pause) })
	}
	var admitted [16][]admission
	for g := range 16 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for more := true; more; more = pause(rng) {
				k := rng.IntN(keys)
				began := time.Since(start)
				var err error
				if rng.IntN(4) == 0 {
					ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
					_, err = l.Acquire(ctx, k, 1)
					cancel()
				} else {
					_, err = l.TryAcquire(k, 1)
				}
				if err == nil {
					granted[k].Add(1)
					admitted[g] = append(admitted[g], admission{k, began, time.Since(start)})
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	// Over each busy spell of 15ms (and its stragglers), a key is asked
	// for far more than its rate, so its admissions come close to the
	// bound over the span they were made in, from the first call's start
	// to the last one's end: an admission lost in a drop or a conversion
	// would take them past it.
	type spell struct {
		n          int64
		first, end time.Duration
	}
	spells := map[[2]int]*spell{}
	for _, adm := range admitted {
		for _, a := range adm {
			id := [2]int{a.key, int(a.began / (40 * time.Millisecond))}
			sp := spells[id]
			if sp == nil {
				sp = &spell{first: a.began}
				spells[id] = sp
			}
			sp.n++
			sp.first, sp.end = min(sp.first, a.began), max(sp.end, a.ended)
		}
	}
	var tight int
	for id, sp := range spells {
		burst, rate := limit(id[0])
		bound := burst + int64((sp.end-sp.first).Seconds()*rate)
		assert.LessOrEqual(t, sp.n, bound, "key %d in spell %d, over %v", id[0], id[1], sp.end-sp.first)
		if sp.n >= bound-2 {
			tight++
		}
	}
	t.Logf("%d of %d busy spells of a key within 2 of their bound", tight, len(spells))
	var total int64
	for k := range granted {
		n := granted[k].Load()
		total += n
		burst, rate := limit(k)
		bound := burst + int64(elapsed.Seconds()*rate)
		assert.LessOrEqual(t, n, bound, "key %d over %v", k, elapsed)
	}
	require.Greater(t, total, int64(min(keys, 8)*100), "the run made progress")
	require.Greater(t, made.Load(), int64(keys*3), "keys were dropped and remade")
	st := l.Stats()
	assert.Equal(t, uint64(total), st.Granted)
	assert.Equal(t, 0, st.Waiting)
}

// TestSetRateBesideTheFastPathKeepsTheBound hammers cell keys as
// TestEvictionNeverLosesAnAdmission does while one more goroutine keeps
// changing them, to the rate and burst they have: each change of a cell
// key detaches its cell into a GCRA of its own while fast-path callers
// decide on it, and each key is dropped when idle and made a cell again,
// to be detached again. A conversion that lost an admission made on the
// cell (or a caller that decided on a detached cell) would let a key's
// grants past its bound, burst + rate·elapsed.
func TestSetRateBesideTheFastPathKeepsTheBound(t *testing.T) {
	const (
		burst = 20
		rate  = 2000 // per second
	)
	var changes, ofCells atomic.Int64
	hammer(t, func(int) (algorithms.Algorithm, error) {
		return algorithms.NewGCRA(algorithms.PerSecond(rate), burst)
	}, func(int) (int64, float64) { return burst, rate }, func(l *keyed.Limiter[int], keys int, rng *rand.Rand, pause func(*rand.Rand) bool) {
		for more := true; more; more = pause(rng) {
			k := rng.IntN(keys)
			if keyed.IsCell(l, k) {
				ofCells.Add(1)
			}
			var err error
			if rng.IntN(2) == 0 {
				err = l.SetRate(k, algorithms.PerSecond(rate))
			} else {
				err = l.SetBurst(k, burst)
			}
			if err != nil {
				t.Errorf("changing key %d: %v", k, err)
				return
			}
			changes.Add(1)
		}
	})
	t.Logf("%d changes, %d of them on cell keys", changes.Load(), ofCells.Load())
	require.Greater(t, ofCells.Load(), int64(20), "cells were detached")
}

// TestSetRateOnACellKeyBesideItsFastPathIsExact detaches fresh cell keys
// while goroutines take units off them on the fast path, in a synctest
// bubble, where the clock stands still while they run and moves only when
// all of them wait (the owners' timers): the rate, one unit an hour, then
// adds nothing. Each key starts full, and its callers take units until
// one is refused, so each key admits its burst + floor(rate·d) = its burst
// exactly, whatever the interleaving: an admission the conversion lost
// would make one more, one it counted twice one fewer. Run it with -race.
func TestSetRateOnACellKeyBesideItsFastPathIsExact(t *testing.T) {
	const burst = 5000
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		l := newLimiter(t, gcraPer[int](algorithms.PerHour(1), burst), keyed.WithShards(2))
		rounds := int(testutil.Volume(100, 1000))
		rng := rand.New(rand.NewPCG(7, 7))
		for key := range rounds {
			_, err := l.TryAcquire(key, 1) // made a cell, one unit taken
			require.NoError(t, err)
			require.True(t, keyed.IsCell(l, key))
			var passed atomic.Int64
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for {
						if _, err := l.TryAcquire(key, 1); err != nil {
							return
						}
						passed.Add(1)
					}
				})
			}
			for range rng.IntN(200) {
				runtime.Gosched() // lets the callers start
			}
			require.NoError(t, l.SetRate(key, algorithms.PerHour(1)))
			wg.Wait()
			require.False(t, keyed.IsCell(l, key))
			if n := passed.Load() + 1; n != burst {
				t.Fatalf("key %d: %d units passed, want the burst of %d", key, n, burst)
			}
		}
		require.Less(t, time.Since(start), time.Hour, "the rate added nothing")
	})
}
