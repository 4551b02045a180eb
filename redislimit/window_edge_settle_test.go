package redislimit_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// countNow admits cost 1 with TryAcquire until refused, at most max, and
// returns how many were admitted.
func countNow(w interface {
	TryAcquire(int64) (permits.Permit, error)
}, max int) int {
	n := 0
	for range max {
		if _, err := w.TryAcquire(1); err != nil {
			break
		}
		n++
	}
	return n
}

// A Settle for a huge actual is a debt: nothing is admitted while the
// grant's instant is in the window, and once it has left, the window
// admits its limit again, exactly.
func TestWindowEdgeSettleHugeActualIsADebtThatEnds(t *testing.T) {
	for _, actual := range []int64{math.MaxInt64, 1 << 62, 1<<53 + 1} {
		t.Run("", func(t *testing.T) {
			inBubble(t, func(t *testing.T, c *redis.Client) {
				limit := algorithms.Rate{Count: 10, Per: time.Second}
				a, b := vwindow(t, c, "huge", limit), vwindow(t, c, "huge", limit)
				_, err := b.TryAcquire(3)
				require.NoError(t, err)
				g, err := a.TryAcquireGrant(2)
				require.NoError(t, err)
				err = a.Settle(g, actual)
				if err != nil {
					// Refusing it is an acceptable reading of the docs too.
					t.Logf("Settle(%d): %v", actual, err)
					assert.ErrorIs(t, err, permits.ErrInvalidCost)
				}
				if err == nil {
					n := countNow(b, 50)
					assert.Zero(t, n, "actual %d: admitted while the debt is in the window", actual)
				}
				time.Sleep(time.Second + time.Millisecond)
				n := countNow(b, 50)
				assert.Equal(t, 10, n, "actual %d: after the debt left the window, the limit exactly", actual)
				time.Sleep(200 * time.Millisecond)
				n = countNow(a, 50)
				assert.Zero(t, n, "actual %d: the 10 admitted are in the window", actual)
				time.Sleep(time.Second)
				n = countNow(a, 50)
				assert.Equal(t, 10, n, "actual %d: a window later, the limit exactly", actual)
				_ = context.Background()
			})
		})
	}
}
