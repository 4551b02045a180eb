package redislimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/redislimit"
)

// aheadClock is package time an hour ahead: an injected clock that is not
// the one Redis decides by.
type aheadClock struct{}

func (aheadClock) Now() time.Time                       { return time.Now().Add(time.Hour) }
func (aheadClock) NewTimer(d time.Duration) actor.Timer { return timer{time.NewTimer(d)} }

type timer struct{ *time.Timer }

func (t timer) C() <-chan time.Time { return t.Timer.C }

// WithClock is the clock of the process's side: grants are stamped by it,
// and a reservation is waited for on its timer, at the distance Redis set.
func TestWithClockStampsLocalInstants(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		l := vlimiter(t, c, "clock", algorithms.PerSecond(10), 1, redislimit.WithClock(aheadClock{}))
		start := time.Now()
		g, err := l.AcquireGrant(context.Background(), 1)
		require.NoError(t, err)
		assert.Equal(t, start.Add(time.Hour), g.At, "stamped by the injected clock")
		g2, err := l.AcquireGrant(context.Background(), 1)
		require.NoError(t, err)
		assert.Equal(t, 100*time.Millisecond, g2.At.Sub(g.At), "reserved one unit later")
		assert.Equal(t, 100*time.Millisecond, time.Since(start), "and waited for on its timer")
	})
}
