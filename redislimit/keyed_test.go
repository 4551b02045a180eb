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

func vkeyed(t *testing.T, c redis.UniversalClient, prefix string, rate algorithms.Rate, burst int64, opts ...redislimit.Option) *redislimit.Keyed {
	t.Helper()
	k, err := redislimit.NewKeyed(c, prefix, rate, burst, append([]redislimit.Option{redislimit.WithServerClock(vnow)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { k.Close() })
	return k
}

func TestKeyedKeysAreIndependentAndHashTagged(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		k := vkeyed(t, c, "user:", algorithms.PerSecond(1), 2)
		for range 2 {
			_, err := k.TryAcquire("alice", 1)
			require.NoError(t, err)
		}
		_, err := k.TryAcquire("alice", 1)
		assert.ErrorIs(t, err, permits.ErrRateLimited)
		_, err = k.TryAcquire("bob", 2)
		assert.NoError(t, err, "bob's quota is his own")

		assert.Equal(t, "user:{alice}", k.RedisKey("alice"), "the hash tag is the user's key: one slot per key in a Cluster")
		_, _, _, _, ok := value(t, c, "user:{alice}")
		assert.True(t, ok)

		var lim permits.KeyedLimiter[string] = k
		p, err := permits.ForKey(lim, "carol").Acquire(context.Background(), 1)
		require.NoError(t, err)
		assert.Equal(t, int64(1), p.Cost())
	})
}

func TestKeyedMakesOneScriptCallPerKeyPerBatch(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		g := newGate()
		k := vkeyed(t, c, "b:", algorithms.PerSecond(1000), 100, redislimit.WithBeforeCall(g.hold))
		warm := make(chan error)
		go func() {
			_, err := k.Acquire(context.Background(), "warm", 1)
			warm <- err
		}()
		release := g.next()
		done := make(chan error, 30)
		for _, key := range []string{"x", "y", "z"} {
			for range 10 {
				go func() {
					_, err := k.Acquire(context.Background(), key, 1)
					done <- err
				}()
			}
		}
		synctest.Wait()
		close(release)
		require.NoError(t, <-warm)
		before := k.Stats() // the thirty's call is held before it is sent
		close(g.next())     // the batch of the thirty
		for range 30 {
			require.NoError(t, <-done)
		}
		after := k.Stats()
		assert.Equal(t, uint64(3), after.Calls-before.Calls, "one call per key, pipelined together")
		assert.Equal(t, uint64(30), after.Decided-before.Decided)
		close(g.calls)
	})
}

func TestConstructorsRefuseBadInput(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for name, f := range map[string]func() error{
		"nil client": func() error { _, err := redislimit.New(nil, "k", algorithms.PerSecond(1), 1); return err },
		"empty key":  func() error { _, err := redislimit.New(c, "", algorithms.PerSecond(1), 1); return err },
		"zero rate":  func() error { _, err := redislimit.New(c, "k", algorithms.Rate{}, 1); return err },
		"zero burst": func() error { _, err := redislimit.New(c, "k", algorithms.PerSecond(1), 0); return err },
		"burst too long for 2^53 ticks": func() error {
			_, err := redislimit.New(c, "k", algorithms.PerHour(1), 1<<22)
			return err
		},
		"count too large": func() error {
			_, err := redislimit.New(c, "k", algorithms.Rate{Count: 1 << 60, Per: 1}, 1)
			return err
		},
		"fail open above one": func() error {
			_, err := redislimit.New(c, "k", algorithms.PerSecond(1), 1, redislimit.WithFailOpen(2, 1))
			return err
		},
		"fail open of zero": func() error {
			_, err := redislimit.New(c, "k", algorithms.PerSecond(1), 1, redislimit.WithFailOpen(0, 1))
			return err
		},
		"keyed fail open": func() error {
			_, err := redislimit.NewKeyed(c, "p:", algorithms.PerSecond(1), 1, redislimit.WithFailOpen(1, 2))
			return err
		},
		"keyed nil client": func() error { _, err := redislimit.NewKeyed(nil, "p:", algorithms.PerSecond(1), 1); return err },
		"nil *redis.Client": func() error {
			_, err := redislimit.New((*redis.Client)(nil), "k", algorithms.PerSecond(1), 1)
			return err
		},
		"keyed nil *redis.ClusterClient": func() error {
			_, err := redislimit.NewKeyed((*redis.ClusterClient)(nil), "p:", algorithms.PerSecond(1), 1)
			return err
		},
		"window nil *redis.Client": func() error {
			_, err := redislimit.NewWindow((*redis.Client)(nil), "w", algorithms.PerMinute(10))
			return err
		},
		// The script forms instants up to now + burst·interval: past 2^53
		// µs the key's TAT could not be read back.
		"burst spanning 262 years": func() error {
			_, err := redislimit.New(c, "k", algorithms.PerHour(1), 2_300_000)
			return err
		},
		"burst spanning 60 years": func() error {
			_, err := redislimit.New(c, "k", algorithms.Every(30*365*24*time.Hour), 2)
			return err
		},
		"fail open of zero of zero": func() error {
			_, err := redislimit.New(c, "k", algorithms.PerSecond(1), 1, redislimit.WithFailOpen(0, 0))
			return err
		},
		"keyed fail open of zero of zero": func() error {
			_, err := redislimit.NewKeyed(c, "p:", algorithms.PerSecond(1), 1, redislimit.WithFailOpen(0, 0))
			return err
		},
	} {
		err := f()
		assert.ErrorIs(t, err, permits.ErrInvalidConfig, name)
	}
	l, err := redislimit.New(c, "k", algorithms.PerSecond(1), 1, nil, redislimit.WithCallTimeout(0), redislimit.WithMaxBatch(0))
	require.NoError(t, err, "nil options and zero values are ignored")
	require.NoError(t, l.Close())
}
