package actor_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
)

// Issue 14: fair shares inside one limit.

// laneGrant is one grant a busy lane received.
type laneGrant struct {
	lane   int // its index among the lanes the helper was given
	ln     *actor.Lane
	cost   int64
	at     time.Duration
	waited bool
}

// busyLanes keeps every lane busy: perLane goroutines each, each asking for
// costs drawn from its lane's range again as soon as it is granted, until
// the limiter closes or stop says so for its lane.
type busyLanes struct {
	t0    time.Time
	mu    sync.Mutex
	log   []laneGrant
	wg    sync.WaitGroup
	stops []chan struct{}
}

func startBusy(t *testing.T, t0 time.Time, lanes []*actor.Lane, costs [][2]int64, perLane int) *busyLanes {
	t.Helper()
	b := &busyLanes{t0: t0}
	for i, ln := range lanes {
		stop := make(chan struct{})
		b.stops = append(b.stops, stop)
		for k := range perLane {
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				rng := rand.New(rand.NewPCG(uint64(i), uint64(k)))
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				go func() { // a lane told to stop leaves the queue at once
					select {
					case <-stop:
						cancel()
					case <-ctx.Done():
					}
				}()
				for {
					cost := costs[i][0] + rng.Int64N(costs[i][1]-costs[i][0]+1)
					g, err := ln.AcquireGrant(ctx, cost)
					if err != nil {
						return
					}
					b.mu.Lock()
					b.log = append(b.log, laneGrant{lane: i, ln: ln, cost: cost, at: g.At.Sub(t0), waited: g.Waited})
					b.mu.Unlock()
				}
			}()
		}
	}
	return b
}

// grants returns the grants so far, in the order of their instants.
func (b *busyLanes) grants() []laneGrant {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := slices.Clone(b.log)
	slices.SortStableFunc(out, func(x, y laneGrant) int { return int(x.at - y.at) })
	return out
}

// waitFor sleeps (in virtual time) until n grants from the queue are in.
func (b *busyLanes) waitFor(n int) {
	for {
		b.mu.Lock()
		waited := 0
		for _, g := range b.log {
			if g.waited {
				waited++
			}
		}
		b.mu.Unlock()
		if waited >= n {
			return
		}
		time.Sleep(time.Second)
	}
}

// queued returns the first n grants from the queue, in the order of their
// instants.
func (b *busyLanes) queued(n int) []laneGrant {
	var out []laneGrant
	for _, g := range b.grants() {
		if g.waited && len(out) < n {
			out = append(out, g)
		}
	}
	return out
}

// units sums each lane's granted cost over grants.
func unitsByLane(grants []laneGrant, lanes int) (units []int64, total int64) {
	units = make([]int64, lanes)
	for _, g := range grants {
		units[g.lane] += g.cost
		total += g.cost
	}
	return units, total
}

// TestLaneShares: with 2, 3 and 10 busy lanes of mixed costs sharing one
// GCRA, over the first 10,000 grants from the queue each lane's share of
// the units is within 1% (relative) of its weight's share.
func TestLaneShares(t *testing.T) {
	cases := []struct {
		name    string
		weights []int
		costs   [][2]int64
	}{
		{"2 lanes 1:3", []int{1, 3}, [][2]int64{{1, 10}, {5, 5}}},
		{"3 lanes 1:2:5", []int{1, 2, 5}, [][2]int64{{1, 1}, {1, 20}, {8, 8}}},
		{"10 lanes 1 to 10", []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
			[][2]int64{{1, 1}, {1, 4}, {1, 8}, {1, 16}, {1, 2}, {3, 3}, {3, 6}, {3, 12}, {3, 24}, {3, 5}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				l := actor.MustNew(gcra(t, algorithms.PerSecond(10_000), 24))
				lanes := make([]*actor.Lane, len(c.weights))
				var wsum int
				for i, w := range c.weights {
					var err error
					lanes[i], err = l.Lane(fmt.Sprint("tenant-", i), w)
					require.NoError(t, err)
					wsum += w
				}
				b := startBusy(t, t0, lanes, c.costs, 3)
				b.waitFor(10_200)
				require.NoError(t, l.Close())
				b.wg.Wait()
				units, total := unitsByLane(b.queued(10_000), len(lanes))
				for i, w := range c.weights {
					share, want := float64(units[i])/float64(total), float64(w)/float64(wsum)
					t.Logf("lane %d weight %d: share %.5f, want %.5f (%+.3f%%)", i, w, share, want, 100*(share-want)/want)
					assert.InEpsilon(t, want, share, 0.01, "lane %d (weight %d)", i, w)
				}
			})
		})
	}
}

// A lane that goes idle hands its share to the busy lanes at once, with no
// gap in the grants, and banks nothing: when it comes back it gets its
// share from its first grant, not a catch-up.
func TestLaneIdleShareMovesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := actor.MustNew(gcra(t, algorithms.PerSecond(100), 1))
		var lanes []*actor.Lane
		for i, w := range []int{1, 1, 2} {
			ln, err := l.Lane(fmt.Sprint("lane-", i), w)
			require.NoError(t, err)
			lanes = append(lanes, ln)
		}
		costs := [][2]int64{{1, 1}, {1, 1}, {1, 1}}
		b := startBusy(t, t0, lanes[:2], costs, 2)
		c := startBusy(t, t0, lanes[2:], costs[2:], 2)
		time.Sleep(10*time.Second + 5*time.Millisecond) // 1000 grants at 100/s
		close(c.stops[0])                               // lane 2 leaves the queue
		c.wg.Wait()
		time.Sleep(10 * time.Second)
		back := startBusy(t, t0, lanes[2:], costs[2:], 2) // lane 2 comes back at +20.005s
		time.Sleep(10 * time.Second)
		require.NoError(t, l.Close())
		b.wg.Wait()
		back.wg.Wait()

		all := slices.Concat(b.grants(), c.grants(), back.grants())
		slices.SortStableFunc(all, func(x, y laneGrant) int { return int(x.at - y.at) })
		window := func(from, to time.Duration) (units []int64, grants []laneGrant) {
			units = make([]int64, len(lanes))
			for _, g := range all {
				if g.waited && g.at >= from && g.at < to {
					units[slices.Index(lanes, g.ln)] += g.cost
					grants = append(grants, g)
				}
			}
			return units, grants
		}
		// While all three wait: 1:1:2.
		u, _ := window(time.Second, 9*time.Second)
		assert.InDeltaSlice(t, []float64{200, 200, 400}, []float64{float64(u[0]), float64(u[1]), float64(u[2])}, 1, "units %v", u)
		// From the moment lane 2 leaves: a grant every 10ms as before, to
		// lanes 0 and 1 only, in turn.
		u, after := window(10*time.Second+10*time.Millisecond, 20*time.Second)
		require.Len(t, after, 999, "no gap: the rate is used in full")
		for k, g := range after {
			assert.Equal(t, 10*time.Second+time.Duration(k+1)*10*time.Millisecond, g.at)
			if k > 0 {
				assert.NotEqual(t, after[k-1].ln, g.ln, "grant %d: lanes 0 and 1 in turn", k)
			}
		}
		assert.Zero(t, u[2])
		// Lane 2 back: from its first grants, half of them, no more.
		u, _ = window(20*time.Second+10*time.Millisecond, 20*time.Second+410*time.Millisecond)
		assert.InDeltaSlice(t, []float64{10, 10, 20}, []float64{float64(u[0]), float64(u[1]), float64(u[2])}, 1, "no catch-up for the time away: %v", u)
	})
}

// The reason for lanes: behind a batch tenant's 1,000 queued requests, an
// interactive request in a lane of its own is granted within two grants,
// not after the batch.
func TestLaneNewcomerDoesNotWaitBehindABacklog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := actor.MustNew(gcra(t, algorithms.PerSecond(100), 1))
		defer l.Close()
		batch, err := l.Lane("batch", 1)
		require.NoError(t, err)
		interactive, err := l.Lane("interactive", 1)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var wg sync.WaitGroup
		for range 1000 {
			wg.Add(1)
			go func() { defer wg.Done(); _, _ = batch.Acquire(ctx, 1) }()
		}
		synctest.Wait()
		time.Sleep(time.Second + 5*time.Millisecond)
		g, err := interactive.AcquireGrant(context.Background(), 1)
		require.NoError(t, err)
		assert.Equal(t, time.Second+20*time.Millisecond, g.At.Sub(t0), "the batch head at +1.01s, then this one")
		cancel()
		wg.Wait()
	})
}

// Inside a lane, FIFO: a lane's waiters are granted in the order they
// arrived, whatever the other lanes do.
func TestLaneIsFIFOInside(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(100), 8))
		defer l.Close()
		require.True(t, l.Allow())
		a, err := l.Lane("a", 1)
		require.NoError(t, err)
		b, err := l.Lane("b", 3)
		require.NoError(t, err)
		var mu sync.Mutex
		var order []string
		var wg sync.WaitGroup
		rng := rand.New(rand.NewPCG(1, 1))
		for i := range 40 {
			ln, name := a, fmt.Sprint("a", i)
			if rng.IntN(2) == 0 {
				ln, name = b, fmt.Sprint("b", i)
			}
			cost := 1 + rng.Int64N(8)
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := ln.Acquire(context.Background(), cost)
				assert.NoError(t, err)
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
			}()
			synctest.Wait()
		}
		wg.Wait()
		for _, lane := range "ab" {
			last := -1
			for _, name := range order {
				if rune(name[0]) != lane {
					continue
				}
				var i int
				fmt.Sscan(name[1:], &i)
				assert.Greater(t, i, last, "lane %c: %s granted after a later arrival", lane, name)
				last = i
			}
		}
	})
}

// Priorities are strict unless a floor is set: a high lane is served while
// it waits, whatever the low lane's weight; with a floor of a tenth the low
// lane keeps a tenth of the units, and never waits more than a bounded run
// of high grants.
func TestLanePriorities(t *testing.T) {
	for _, floor := range []float64{0, 0.1} {
		t.Run(fmt.Sprint("floor ", floor), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				l := actor.MustNew(gcra(t, algorithms.PerSecond(1000), 5))
				require.NoError(t, l.SetPriorityFloor(floor))
				low, err := l.Lane("batch", actor.MaxLaneWeight)
				require.NoError(t, err)
				high, err := l.Lane("interactive", 1, actor.WithPriority(1))
				require.NoError(t, err)
				assert.Equal(t, 1, high.Priority())
				b := startBusy(t, t0, []*actor.Lane{high, low}, [][2]int64{{1, 5}, {1, 5}}, 3)
				b.waitFor(10_200)
				require.NoError(t, l.Close())
				b.wg.Wait()
				queued := b.queued(10_000)
				require.Len(t, queued, 10_000)
				units, total := unitsByLane(queued, 2)
				if floor == 0 {
					assert.Zero(t, units[1], "strict: the low lane waits while the high one is busy")
					return
				}
				assert.InEpsilon(t, 0.1, float64(units[1])/float64(total), 0.01, "units %v", units)
				run, worst := int64(0), int64(0)
				for _, g := range queued {
					if g.lane == 1 {
						run = 0
						continue
					}
					run += g.cost
					worst = max(worst, run)
				}
				// Self-clocked fair queueing at the level: at most
				// cmax·(1-f)/f + cmax units above between two grants below.
				assert.LessOrEqual(t, worst, int64(5*9+5), "units of the high lane in a row")
				t.Logf("units %v of %d; longest run of the high lane: %d units", units, total, worst)
			})
		})
	}
}

// A positive floor, however small, is never rounded down to strict
// priority: the lower lane is served while the higher one stays busy (after
// about a million units of it at a floor of a millionth).
func TestLaneTinyFloorStillServesTheLowerPriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := actor.MustNew(gcra(t, algorithms.PerSecond(1_000_000), 1000))
		require.NoError(t, l.SetPriorityFloor(1e-9))
		high, err := l.Lane("interactive", 1, actor.WithPriority(1))
		require.NoError(t, err)
		low, err := l.Lane("batch", 1)
		require.NoError(t, err)
		b := startBusy(t, t0, []*actor.Lane{high}, [][2]int64{{1000, 1000}}, 3)
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // 10,000 grants of the high lane
		defer cancel()
		g, err := low.AcquireGrant(ctx, 1)
		require.NoError(t, err, "the low lane starved behind the busy high one")
		assert.Less(t, g.At.Sub(t0), 2*time.Second)
		require.NoError(t, l.Close())
		b.wg.Wait()
	})
}
