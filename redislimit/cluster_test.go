package redislimit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

func TestOnACluster(t *testing.T) {
	cl := redistest.TestCluster(t, 3)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()

	k, err := redislimit.NewKeyed(c, "quota:", algorithms.PerMinute(1), 2)
	require.NoError(t, err)
	defer k.Close()
	const users = 60
	errs := make(chan error, 3*users)
	for u := range users {
		for range 3 {
			go func() {
				_, err := k.TryAcquire(fmt.Sprint("user", u), 1)
				errs <- err
			}()
		}
	}
	granted, limited := 0, 0
	for range 3 * users {
		switch err := <-errs; {
		case err == nil:
			granted++
		case errors.Is(err, permits.ErrRateLimited):
			limited++
		default:
			t.Fatalf("TryAcquire: %v", err)
		}
	}
	assert.Equal(t, 2*users, granted, "each key's burst, on whichever node holds it")
	assert.Equal(t, users, limited)

	// The keys are spread over the nodes by their hash tags.
	nodes := 0
	for _, s := range cl.Servers {
		n, err := s.Client(t).DBSize(ctx).Result()
		require.NoError(t, err)
		if n > 0 {
			nodes++
		}
	}
	assert.Equal(t, 3, nodes, "every node holds some of the keys")

	l, err := redislimit.New(c, "quota:{shared}", algorithms.PerSecond(10), 1)
	require.NoError(t, err)
	defer l.Close()
	_, err = l.Acquire(ctx, 1)
	require.NoError(t, err)
	_, err = l.TryAcquire(1)
	assert.ErrorIs(t, err, permits.ErrRateLimited)
}
