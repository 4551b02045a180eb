package actor_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/permits"
)

// An owner runs under pprof labels that name it, so that a goroutine dump
// of a limiter or pool nobody closed says which one it is.
func TestOwnersRunUnderTheirNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1), actor.WithName("search-api"))
		defer l.Close()
		p := newPool(t, 4, actor.WithName("db-conns"))
		defer p.Close()
		synctest.Wait() // both owners have started and parked
		labels := testutil.GoroutineLabels()
		assert.Contains(t, labels, `{"sluice.algorithm":"GCRA", "sluice.limiter":"search-api"}`)
		assert.Contains(t, labels, `{"sluice.pool":"db-conns"}`)
	})
}

// WithPoolName and WithPoolMaxQueue, the old names of WithName and
// WithMaxQueue for a Pool, still do what they did.
func TestThePoolsOldOptionNamesStillWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, 1, actor.WithPoolName("old-name"), actor.WithPoolMaxQueue(1))
		defer p.Close()
		held, err := p.Acquire(context.Background(), 1)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { _, _ = p.Acquire(ctx, 1) }()
		synctest.Wait()
		_, err = p.Acquire(context.Background(), 1)
		require.ErrorIs(t, err, permits.ErrRateLimited, "the queue of one is full")
		assert.Contains(t, testutil.GoroutineLabels(), `{"sluice.pool":"old-name"}`)
		cancel()
		held.Release()
	})
}
