package redislimit_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/redislimit"
)

func TestRefundGivesBackOnlyTheLatestAdmissionAndOnlyOnce(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		l := vlimiter(t, c, "refund", algorithms.PerSecond(10), 1)
		g, err := l.TryAcquireGrant(1)
		require.NoError(t, err)
		assert.False(t, g.Waited)
		_, err = l.TryAcquire(1)
		require.Error(t, err, "the burst is spent")

		require.True(t, l.Refund(g), "nothing was admitted behind it")
		assert.False(t, l.Refund(g), "a second refund of one grant gives nothing")
		g2, err := l.TryAcquireGrant(1)
		require.NoError(t, err, "the unit is back")
		done0 := make(chan permits.Grant)
		go func() { g, _ := l.AcquireGrant(context.Background(), 1); done0 <- g }()
		waited := <-done0
		assert.True(t, waited.Waited, "reserved 100 ms ahead")
		assert.False(t, l.Refund(g2), "an admission lies behind it")
		assert.True(t, l.Refund(waited), "the latest admission")
		g2, err = l.TryAcquireGrant(1)
		require.NoError(t, err, "the reserved unit is back: at 100 ms, now")
		assert.Equal(t, uint64(2), l.Stats().Refunded)

		// Someone else (another process, on the same key) is admitted
		// after g2: g2 can no longer be taken back.
		other := vlimiter(t, c, "refund", algorithms.PerSecond(10), 1)
		done := make(chan error)
		go func() { _, err := other.Acquire(context.Background(), 1); done <- err }()
		synctest.Wait()
		assert.False(t, l.Refund(g2), "an admission lies behind it")
		require.NoError(t, <-done)
	})
}

func TestRefundRefusesWhatItDidNotGrant(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		a := vlimiter(t, c, "ra", algorithms.PerSecond(10), 2)
		b := vlimiter(t, c, "rb", algorithms.PerSecond(10), 2)
		g, err := a.TryAcquireGrant(1)
		require.NoError(t, err)
		assert.False(t, b.Refund(g), "a grant of another limiter")
		assert.False(t, a.Refund(permits.Grant{}), "the zero Grant")
		require.NoError(t, a.Close())
		assert.False(t, a.Refund(g), "closed")
	})
}

func TestRefundTakesBackOnlyTheLastAdmissionOfACall(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		g := newGate()
		l := vlimiter(t, c, "rlast", algorithms.PerSecond(10), 3, redislimit.WithBeforeCall(g.hold))
		acquire := func(grants chan<- permits.Grant) {
			gr, err := l.AcquireGrant(context.Background(), 1)
			assert.NoError(t, err)
			grants <- gr
		}
		firsts, later := make(chan permits.Grant, 1), make(chan permits.Grant, 2)
		go acquire(firsts)
		release := g.next() // the first call is held; the next two gather
		go acquire(later)
		go acquire(later)
		synctest.Wait()
		close(release)
		close(g.next()) // the second call: both together
		first := <-firsts
		y, z := <-later, <-later
		// Three script calls: the first EVALSHA met NOSCRIPT on the fresh
		// server and was sent again as EVAL; then Y and Z in one.
		assert.Equal(t, uint64(3), l.Stats().Calls)
		go func() {
			for r := range g.calls {
				close(r)
			}
		}()
		refundedY, refundedZ := l.Refund(y), l.Refund(z)
		assert.NotEqual(t, refundedY, refundedZ, "exactly one of the two is its call's last admission")
		assert.False(t, l.Refund(first), "admissions lie behind the first call's")
		close(g.calls)
	})
}

// All takes a Redis rate and an in-process pool together and gives the
// rate back when the pool refuses.
func TestAllRefundsTheRedisRateWhenAnotherPartFails(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		rate := vlimiter(t, c, "all", algorithms.PerSecond(10), 1)
		lim := permits.All(rate, permits.FixedCost(refuser{}, 1))
		_, err := lim.TryAcquire(1)
		require.ErrorIs(t, err, permits.ErrRateLimited)
		_, err = rate.TryAcquire(1)
		assert.NoError(t, err, "the rate grant All took was refunded")
	})
}

// refuser is a limiter that refuses everything.
type refuser struct{}

func (refuser) Acquire(ctx context.Context, cost int64) (permits.Permit, error) {
	return refuser{}.TryAcquire(cost)
}

func (refuser) TryAcquire(int64) (permits.Permit, error) {
	return permits.Permit{}, &permits.RateLimitError{RetryAfter: time.Second}
}
