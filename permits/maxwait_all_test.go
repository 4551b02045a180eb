package permits_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// counting is a rate limiter from elsewhere: it charges every grant and
// cannot take one back (no Refund; Release does nothing).
type counting struct{ charged atomic.Int64 }

func (c *counting) Acquire(ctx context.Context, cost int64) (permits.Permit, error) {
	if err := ctx.Err(); err != nil {
		return permits.Permit{}, err
	}
	c.charged.Add(cost)
	return permits.NewPermit(cost, nil, nil), nil
}

func (c *counting) TryAcquire(cost int64) (permits.Permit, error) {
	c.charged.Add(cost)
	return permits.NewPermit(cost, nil, nil), nil
}

// MaxWait waits first and tries only when the bound ended with no wait
// predicted: a try before the wait, when a rate part makes the request
// wait, would charge the foreign part, and the Acquire after it would
// charge it again.
func TestMaxWaitChargesAForeignPartOfAllOnce(t *testing.T) {
	foreign := &counting{}
	rate := rateLimiter(t, algorithms.Rate{Count: 100, Per: time.Second}, 1)
	_, err := rate.TryAcquire(1) // the next grant is 10ms away
	require.NoError(t, err)
	lim := permits.MaxWait(permits.All(foreign, rate), time.Second)
	p, err := lim.Acquire(context.Background(), 1)
	require.NoError(t, err)
	p.Release()
	require.Equal(t, int64(1), foreign.charged.Load(), "one request, one charge of the foreign part")
}
