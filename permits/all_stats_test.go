package permits_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// TestAllsOwnTriesAreNotRejections pins what the parts' Stats say of a
// request All admits after a wait: the try that found a rate empty was All
// learning which rate to wait on, not a refusal of a caller, and the grant
// it gave back to wait is counted as refunded. Before, the empty rate
// counted a rejection of a request it granted, and nothing counted the
// refund.
func TestAllsOwnTriesAreNotRejections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		requests := rateLimiter(t, algorithms.PerSecond(10), 1)
		tokens := rateLimiter(t, algorithms.PerSecond(1), 1)
		_, err := tokens.TryAcquire(1) // empty: the next unit in 1s
		require.NoError(t, err)

		both := permits.All(requests, tokens)
		pm, err := both.Acquire(context.Background(), 1)
		require.NoError(t, err)
		pm.Release()

		assert.Equal(t, permits.Stats{Granted: 2, Refunded: 1}, requests.Stats(),
			"granted, given back to wait on tokens, granted again")
		assert.Equal(t, permits.Stats{Granted: 2}, tokens.Stats(), "the first TryAcquire, then All's wait")
	})
}

// TestAllsOwnTriesAreNotRejectionsUnderAMaxWait is the same through
// permits.MaxWait, whose bound All sees through.
func TestAllsOwnTriesAreNotRejectionsUnderAMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		requests := rateLimiter(t, algorithms.PerSecond(10), 1)
		tokens := rateLimiter(t, algorithms.PerSecond(1), 1)
		_, err := tokens.TryAcquire(1)
		require.NoError(t, err)

		both := permits.All(permits.MaxWait(requests, time.Minute), permits.MaxWait(tokens, time.Minute))
		pm, err := both.Acquire(context.Background(), 1)
		require.NoError(t, err)
		pm.Release()

		assert.Equal(t, permits.Stats{Granted: 2, Refunded: 1}, requests.Stats())
		assert.Equal(t, permits.Stats{Granted: 2}, tokens.Stats())
	})
}

// TestAllsRefusalToItsCallerIsARejection: what All returns to its caller
// is a refusal, counted by the part that made it.
func TestAllsRefusalToItsCallerIsARejection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		requests := rateLimiter(t, algorithms.PerSecond(10), 1)
		tokens := rateLimiter(t, algorithms.PerSecond(1), 1)
		_, err := tokens.TryAcquire(1)
		require.NoError(t, err)

		_, err = permits.All(requests, tokens).TryAcquire(1)
		require.ErrorIs(t, err, permits.ErrRateLimited)
		assert.Equal(t, permits.Stats{Granted: 1, Refunded: 1}, requests.Stats())
		assert.Equal(t, permits.Stats{Granted: 1, Rejected: 1}, tokens.Stats())
	})
}

// TestARefundIsCounted: Refunded counts the refunds that gave something
// back, and only those.
func TestARefundIsCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := rateLimiter(t, algorithms.PerSecond(1), 1)
		g, err := l.TryAcquireGrant(1)
		require.NoError(t, err)
		require.True(t, l.Refund(g))
		require.False(t, l.Refund(g), "a second refund of one grant")
		assert.Equal(t, permits.Stats{Granted: 1, Refunded: 1}, l.Stats())
	})
}

// TestAllsOwnTriesAreNotRejectionsByTheOwner: a sliding window has no
// lock-free path, so its tries, in a lane too, are decided by the owner,
// which does not count them either.
func TestAllsOwnTriesAreNotRejectionsByTheOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		requests := rateLimiter(t, algorithms.PerSecond(10), 1)
		sw, err := algorithms.NewSlidingWindow(algorithms.PerSecond(1))
		require.NoError(t, err)
		tokens := actor.MustNew(sw)
		defer tokens.Close()
		lane, err := tokens.Lane("batch", 1)
		require.NoError(t, err)
		_, err = lane.TryAcquire(1)
		require.NoError(t, err)

		pm, err := permits.All(requests, lane).Acquire(context.Background(), 1)
		require.NoError(t, err)
		pm.Release()

		assert.Equal(t, permits.Stats{Granted: 2, Refunded: 1}, requests.Stats())
		assert.Equal(t, permits.Stats{Granted: 2}, tokens.Stats())
	})
}
