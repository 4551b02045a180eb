package redislimit_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// A Keyed made while its Cluster cannot answer CLUSTER SLOTS (every master
// down: restarting, unreachable) loads the map of the slots once the
// Cluster answers, and batches per master from then on. go-redis keeps no
// failed load, so a single try at construction left every key on one
// node, with one health, for the limiter's whole life.
func TestAFailedFirstLoadOfTheSlotsIsTriedAgain(t *testing.T) {
	cl := redistest.TestCluster(t, 3)
	for _, s := range cl.Servers {
		s.Kill() // connections refused: the load fails at once
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { c.Close() })
	const timeout = 200 * time.Millisecond
	k, err := redislimit.NewKeyed(c, "warm:", benchRate, benchBurst, redislimit.WithCallTimeout(timeout))
	require.NoError(t, err)
	t.Cleanup(func() { k.Close() })
	time.Sleep(2 * timeout) // the load made at construction has failed
	assert.False(t, redislimit.SlotsLoaded(k), "no map while every master is down")
	for _, s := range cl.Servers {
		require.NoError(t, s.Restart()) // the same ports, the same slots
	}
	// Requests keep coming; the engine tries the load again once a second
	// of its own time since the last try, and the Cluster now answers.
	deadline := time.Now().Add(30 * time.Second) // a bound for a busy machine, not a speed
	for !redislimit.SlotsLoaded(k) && time.Now().Before(deadline) {
		_, _ = k.TryAcquire("user", 1)
		time.Sleep(10 * time.Millisecond)
	}
	require.True(t, redislimit.SlotsLoaded(k), "the map of the slots was loaded again")
	waitServing(t, k, "user") // the restarted masters agree again
}
