package keyed_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/keyed"
)

// TestEvictionNeverLosesAnAdmission hammers a few keys whose state is full
// again a millisecond after each use, with pauses, so that the owners drop
// and remake them all the time while fast-path callers decide on them. A
// key is dropped only when full and an admission is never made on a key
// being dropped, so each key's grants over the run stay within its bound,
// burst + rate·elapsed, however often it was remade. (Real time: the bound
// is taken over the whole run, measured around it.)
func TestEvictionNeverLosesAnAdmission(t *testing.T) {
	const (
		burst = 3
		rate  = 2000 // per second
	)
	hammer(t, func(int) (algorithms.Algorithm, error) {
		return algorithms.NewGCRA(algorithms.PerSecond(rate), burst)
	}, func(int) (int64, float64) { return burst, rate })
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
	}, config)
}

func hammer(t *testing.T, newAlg func(int) (algorithms.Algorithm, error), limit func(key int) (burst int64, rate float64)) {
	const keys = 8
	var made atomic.Int64
	l := newLimiter(t, func(k int) (algorithms.Algorithm, error) {
		made.Add(1)
		return newAlg(k)
	}, keyed.WithShards(2))
	var granted [keys]atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for time.Since(start) < 300*time.Millisecond {
				k := rng.IntN(keys)
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
				}
				// Every 40ms all pause for 25ms, so that every key goes idle
				// and is dropped; some pause at random besides.
				if phase := time.Since(start) % (40 * time.Millisecond); phase >= 15*time.Millisecond {
					time.Sleep(40*time.Millisecond - phase)
				} else if rng.IntN(50) == 0 {
					time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	var total int64
	for k := range granted {
		n := granted[k].Load()
		total += n
		burst, rate := limit(k)
		bound := burst + int64(elapsed.Seconds()*rate)
		assert.LessOrEqual(t, n, bound, "key %d over %v", k, elapsed)
	}
	require.Greater(t, total, int64(keys*100), "the run made progress")
	require.Greater(t, made.Load(), int64(keys*3), "keys were dropped and remade")
	st := l.Stats()
	assert.Equal(t, uint64(total), st.Granted)
	assert.Equal(t, 0, st.Waiting)
}
