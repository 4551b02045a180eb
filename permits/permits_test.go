package permits_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/permits"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type counter struct {
	mu       sync.Mutex
	released int64
}

func (c *counter) ReleasePermit(p permits.Permit) {
	c.mu.Lock()
	c.released += p.Cost()
	c.mu.Unlock()
}

func TestReleaseIsIdempotentAcrossCopies(t *testing.T) {
	c := &counter{}
	tok := &permits.Token{}
	p := permits.NewPermit(3, c, tok)
	q := p // a copy
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				p.Release()
			} else {
				q.Release()
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(3), c.released)

	// The token may be reused once released: the stale copies stay inert.
	r := permits.NewPermit(2, c, tok)
	p.Release()
	assert.Equal(t, int64(3), c.released)
	r.Release()
	r.Release()
	assert.Equal(t, int64(5), c.released)
}

func TestRatePermitReleaseIsANoOp(t *testing.T) {
	p := permits.NewPermit(4, nil, nil)
	assert.Equal(t, int64(4), p.Cost())
	p.Release()
	p.Release()
	var zero permits.Permit
	zero.Release()
	assert.Equal(t, int64(0), zero.Cost())
}

func TestRateLimitErrorMatching(t *testing.T) {
	err := fmt.Errorf("calling api: %w", &permits.RateLimitError{RetryAfter: time.Second})
	assert.ErrorIs(t, err, permits.ErrRateLimited)
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	d, ok := permits.RetryAfter(err)
	assert.True(t, ok)
	assert.Equal(t, time.Second, d)

	dl := &permits.RateLimitError{RetryAfter: time.Second, Cause: context.DeadlineExceeded}
	assert.ErrorIs(t, dl, permits.ErrRateLimited)
	assert.ErrorIs(t, dl, context.DeadlineExceeded)
	assert.Contains(t, dl.Error(), "retry after 1s")

	_, ok = permits.RetryAfter(errors.New("other"))
	assert.False(t, ok)
	assert.ErrorIs(t, permits.CostExceedsCapacity(5, 4), permits.ErrCostExceedsCapacity)
	assert.ErrorIs(t, permits.InvalidCost(0), permits.ErrInvalidCost)
}

// TestRetryLaterIsARateLimitError: the lean refusal of the lock-free paths
// answers every question a *RateLimitError answers, wrapped or not.
func TestRetryLaterIsARateLimitError(t *testing.T) {
	for _, err := range []error{permits.RetryLater(1500 * time.Millisecond), fmt.Errorf("calling api: %w", permits.RetryLater(1500*time.Millisecond))} {
		assert.ErrorIs(t, err, permits.ErrRateLimited)
		assert.NotErrorIs(t, err, context.DeadlineExceeded)
		d, ok := permits.RetryAfter(err)
		assert.True(t, ok)
		assert.Equal(t, 1500*time.Millisecond, d)
		var rl *permits.RateLimitError
		if assert.ErrorAs(t, err, &rl) {
			assert.Equal(t, 1500*time.Millisecond, rl.RetryAfter)
			assert.NoError(t, rl.Cause)
		}
		assert.Contains(t, err.Error(), "sluice: rate limited, retry after 1.5s")
		var other *net.OpError
		assert.False(t, errors.As(err, &other))
	}
	d, _ := permits.RetryAfter(permits.RetryLater(0))
	assert.Equal(t, time.Nanosecond, d, "a refusal always says to wait at least 1ns")
}

func BenchmarkRefusal(b *testing.B) {
	b.Run("RateLimitError", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			sinkErr = &permits.RateLimitError{RetryAfter: time.Duration(i)}
		}
	})
	b.Run("RetryLater", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			sinkErr = permits.RetryLater(time.Duration(i))
		}
	})
}

var sinkErr error

func TestUnlimited(t *testing.T) {
	p, err := permits.Unlimited.Acquire(context.Background(), 1e9)
	require.NoError(t, err)
	assert.Equal(t, int64(1e9), p.Cost())
	_, err = permits.Unlimited.TryAcquire(0)
	assert.ErrorIs(t, err, permits.ErrInvalidCost)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = permits.Unlimited.Acquire(ctx, 1)
	assert.ErrorIs(t, err, context.Canceled)
}
