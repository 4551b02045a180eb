package redislimit_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/redislimit"
)

// The grant hook, which the bound tests count grants with, tells only of
// grants their callers got: a reserved waiter whose caller gives up at the
// very instant its slot falls due is not granted (its slot is dealt out
// again or given back), and a hook that told of it would count that room
// twice. Here the caller gives up from inside the hook and the hook waits
// for its Acquire to return: a hook called before the grant is the
// caller's sees it return context.Canceled.
func TestTheGrantHookTellsOnlyOfGrantsTheirCallersGot(t *testing.T) {
	limits := map[string]func(c *redis.Client, hook redislimit.Option) (limit, error){
		"GCRA": func(c *redis.Client, hook redislimit.Option) (limit, error) {
			return redislimit.New(c, "hook-gcra", algorithms.PerSecond(1), 1, redislimit.WithServerClock(vnow), hook)
		},
		"Window": func(c *redis.Client, hook redislimit.Option) (limit, error) {
			return redislimit.NewWindow(c, "hook-window", algorithms.Rate{Count: 1, Per: time.Second}, redislimit.WithServerClock(vnow), hook)
		},
	}
	for name, newLimit := range limits {
		t.Run(name, func(t *testing.T) {
			inBubble(t, func(t *testing.T, c *redis.Client) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				returned := make(chan error, 1)
				var armed atomic.Bool
				var told []error // what the caller of each grant told of returned
				l, err := newLimit(c, redislimit.WithGrantHook(func(_, _ int64) {
					if !armed.Load() {
						told = append(told, nil)
						return
					}
					cancel()
					told = append(told, <-returned)
				}))
				require.NoError(t, err)
				_, err = l.TryAcquire(1)
				require.NoError(t, err, "the burst")
				armed.Store(true)
				go func() {
					_, err := l.Acquire(ctx, 1)
					returned <- err
				}()
				time.Sleep(2 * time.Second)   // its slot, a second ahead, falls due
				require.NoError(t, l.Close()) // the owner has exited: told is ours
				require.Len(t, told, 2, "the burst's grant and the waiter's")
				assert.NoError(t, told[1], "the grant told of is its caller's")
			})
		})
	}
}
