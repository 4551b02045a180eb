package actor_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/permits"
)

// recorder is a controller that keeps every sample and sets the limit
// next returns (the current one when next is nil).
type recorder struct {
	mu      sync.Mutex
	samples []actor.Sample
	next    func(s actor.Sample, limit int64) int64
}

func (r *recorder) Update(s actor.Sample, limit int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples = append(r.samples, s)
	if r.next != nil {
		return r.next(s, limit)
	}
	return limit
}

func (r *recorder) seen() []actor.Sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]actor.Sample(nil), r.samples...)
}

func newAdaptive(t *testing.T, ctl actor.Controller, opts ...actor.AdaptiveOption) *actor.AdaptivePool {
	t.Helper()
	p, err := actor.NewAdaptivePool(ctl, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

func TestAdaptiveDoneReportsTheLatencyFromTheGrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		p := newAdaptive(t, rec)
		pm, err := p.Acquire(t.Context(), 1)
		require.NoError(t, err)
		time.Sleep(30 * time.Millisecond)
		p.Done(pm, actor.Success)
		time.Sleep(time.Second) // the owner decides on the samples a millisecond after the first
		s := rec.seen()
		require.Len(t, s, 1)
		assert.Equal(t, actor.Success, s[0].Outcome)
		assert.Equal(t, 30*time.Millisecond, s[0].RTT)
		assert.Equal(t, int64(1), s[0].InFlight)
		assert.Equal(t, int64(1), p.Stats().Samples)
	})
}

func TestAdaptiveReleaseGivesBackAndReportsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		p := newAdaptive(t, rec)
		pm, err := p.TryAcquire(1)
		require.NoError(t, err)
		pm.Release()
		p.Done(pm, actor.Success) // a second end of the same permit: nothing
		time.Sleep(time.Second)
		assert.Empty(t, rec.seen())
		st := p.Stats()
		assert.Equal(t, int64(0), st.InFlight)
		assert.Equal(t, int64(0), st.Samples)
	})
}

func TestAdaptiveDoneCountsOncePerPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		p := newAdaptive(t, rec, actor.WithLimits(1, 2, 2))
		a, _ := p.TryAcquire(1)
		b, _ := p.TryAcquire(1)
		p.Done(a, actor.Overload)
		p.Done(a, actor.Success)
		a.Release()
		time.Sleep(time.Second)
		assert.Len(t, rec.seen(), 1)
		assert.Equal(t, int64(1), p.Stats().InFlight, "b is still held")
		p.Done(b, actor.Timeout)
		time.Sleep(time.Second)
		assert.Equal(t, int64(2), p.Stats().Signals)
	})
}

func TestAdaptiveDoneReleasesAPermitOfAnotherLimiter(t *testing.T) {
	other := newPool(t, 1)
	defer other.Close()
	p := newAdaptive(t, &recorder{})
	pm, err := other.TryAcquire(1)
	require.NoError(t, err)
	p.Done(pm, actor.Success)
	assert.Equal(t, int64(0), other.Stats().InFlight)
}

func TestAdaptiveRaisedLimitGrantsWaitersInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{next: func(actor.Sample, int64) int64 { return 3 }}
		p := newAdaptive(t, rec, actor.WithLimits(1, 2, 10))
		a, _ := p.TryAcquire(1)
		b, _ := p.TryAcquire(1)
		var mu sync.Mutex
		var order []int
		var held []permits.Permit
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Go(func() {
				pm, err := p.Acquire(t.Context(), 1)
				if assert.NoError(t, err) {
					mu.Lock()
					order, held = append(order, i), append(held, pm)
					mu.Unlock()
				}
			})
			synctest.Wait() // arrival order is start order
		}
		p.Done(a, actor.Success) // frees a unit for waiter 0; the controller then raises the limit to 3
		synctest.Wait()
		mu.Lock()
		assert.Equal(t, []int{0}, order, "waiter 1 waits for the raise")
		mu.Unlock()
		wg.Wait()
		assert.Equal(t, []int{0, 1}, order)
		assert.Equal(t, int64(3), p.Limit())
		assert.Equal(t, int64(3), p.Stats().InFlight)
		b.Release()
		for _, pm := range held {
			pm.Release()
		}
	})
}

func TestAdaptiveWaiterLeavesWhenItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newAdaptive(t, &recorder{}, actor.WithLimits(1, 1, 1))
		held, _ := p.TryAcquire(1)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := p.Acquire(ctx, 1)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		held.Release()
		pm, err := p.TryAcquire(1)
		require.NoError(t, err, "the cancelled waiter took nothing")
		pm.Release()
	})
}

func TestAdaptiveWithoutQueueRefusesAtTheLimit(t *testing.T) {
	p := newAdaptive(t, &recorder{}, actor.WithLimits(1, 1, 1), actor.WithoutQueue)
	held, err := p.Acquire(t.Context(), 1)
	require.NoError(t, err)
	_, err = p.Acquire(t.Context(), 1)
	assert.ErrorIs(t, err, permits.ErrRateLimited)
	held.Release()
	assert.Equal(t, uint64(1), p.Stats().Rejected)
}

func TestAdaptiveCostAboveTheFloorFails(t *testing.T) {
	p := newAdaptive(t, &recorder{}, actor.WithLimits(2, 5, 10))
	_, err := p.TryAcquire(3)
	assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity)
	_, err = p.Acquire(t.Context(), 0)
	assert.ErrorIs(t, err, permits.ErrInvalidCost)
}

func TestAdaptiveClosedFailsWaitersAndLaterCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := actor.NewAdaptivePool(&recorder{}, actor.WithLimits(1, 1, 1))
		require.NoError(t, err)
		held, _ := p.TryAcquire(1)
		done := make(chan error)
		go func() { _, err := p.Acquire(context.Background(), 1); done <- err }()
		synctest.Wait()
		require.NoError(t, p.Close())
		assert.ErrorIs(t, <-done, permits.ErrClosed)
		_, err = p.TryAcquire(1)
		assert.ErrorIs(t, err, permits.ErrClosed)
		p.Done(held, actor.Success) // harmless after Close
	})
}

func TestAdaptiveBadConfigFails(t *testing.T) {
	cases := map[string]struct {
		ctl  actor.Controller
		opts []actor.AdaptiveOption
	}{
		"nil controller":        {nil, nil},
		"floor 0":               {&actor.AIMD{}, []actor.AdaptiveOption{actor.WithLimits(0, 1, 2)}},
		"initial below floor":   {&actor.AIMD{}, []actor.AdaptiveOption{actor.WithLimits(5, 4, 10)}},
		"ceiling below initial": {&actor.AIMD{}, []actor.AdaptiveOption{actor.WithLimits(1, 4, 3)}},
		"ceiling 2^31":          {&actor.AIMD{}, []actor.AdaptiveOption{actor.WithLimits(1, 4, 1<<31)}},
		"AIMD backoff 1":        {&actor.AIMD{Backoff: 1}, nil},
		"AIMD negative timeout": {&actor.AIMD{Timeout: -1}, nil},
		"Vegas alpha over beta": {&actor.Vegas{Alpha: 7, Beta: 6}, nil},
		"Gradient2 tolerance":   {&actor.Gradient2{Tolerance: 0.5}, nil},
		"Gradient2 smoothing":   {&actor.Gradient2{Smoothing: 2}, nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := actor.NewAdaptivePool(c.ctl, c.opts...)
			assert.Nil(t, p)
			assert.True(t, errors.Is(err, permits.ErrInvalidConfig), "%v", err)
		})
	}
}
