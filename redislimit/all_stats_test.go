package redislimit_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// TestAllsOwnTriesAreNotRejections pins what a Limiter's Stats say of a
// request permits.All admits after a wait, as actor's do: the try that
// found the rate empty was All learning which part to wait on, not a
// refusal of a caller. Before, the empty limiter counted a rejection of a
// request it then granted.
func TestAllsOwnTriesAreNotRejections(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		requests := vlimiter(t, c, "all:requests", algorithms.PerSecond(10), 1)
		tokens := vlimiter(t, c, "all:tokens", algorithms.PerSecond(1), 1)
		_, err := tokens.TryAcquire(1) // empty: the next unit in 1 s
		require.NoError(t, err)

		pm, err := permits.All(requests, tokens).Acquire(context.Background(), 1)
		require.NoError(t, err)
		pm.Release()

		assert.Equal(t, permits.Stats{Granted: 2, Refunded: 1}, requests.Stats().Stats,
			"granted, given back to wait on tokens, granted again")
		assert.Equal(t, permits.Stats{Granted: 2}, tokens.Stats().Stats, "the first TryAcquire, then All's wait")
	})
}

// TestAllsOwnTriesOfAWindowAreNotRejections is the same with a Window as
// the part that is empty.
func TestAllsOwnTriesOfAWindowAreNotRejections(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		requests := vlimiter(t, c, "allw:requests", algorithms.PerSecond(10), 1)
		tokens := vwindow(t, c, "allw:tokens", algorithms.PerSecond(1))
		_, err := tokens.TryAcquire(1)
		require.NoError(t, err)

		pm, err := permits.All(requests, tokens).Acquire(context.Background(), 1)
		require.NoError(t, err)
		pm.Release()

		assert.Equal(t, permits.Stats{Granted: 2, Refunded: 1}, requests.Stats().Stats)
		assert.Equal(t, permits.Stats{Granted: 2}, tokens.Stats().Stats)
	})
}

// TestAllsRefusalToItsCallerIsARejection: what All returns to its caller
// is a refusal, counted by the part that made it.
func TestAllsRefusalToItsCallerIsARejection(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		requests := vlimiter(t, c, "allr:requests", algorithms.PerSecond(10), 1)
		tokens := vlimiter(t, c, "allr:tokens", algorithms.PerSecond(1), 1)
		_, err := tokens.TryAcquire(1)
		require.NoError(t, err)

		_, err = permits.All(requests, tokens).TryAcquire(1)
		require.ErrorIs(t, err, permits.ErrRateLimited)
		assert.Equal(t, permits.Stats{Granted: 1, Refunded: 1}, requests.Stats().Stats)
		assert.Equal(t, permits.Stats{Granted: 1, Rejected: 1}, tokens.Stats().Stats)
	})
}
