package redislimit_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// clusterTimeout is the call timeout of the Cluster tests: a call to a
// stopped master fails after it, and one to a healthy master must never
// take that long. failBound is how late a request to the stopped master
// may fail: its call timeout, plus what a busy machine adds to a timer.
const (
	clusterTimeout = time.Second
	failBound      = clusterTimeout + clusterTimeout/2
)

// clusterKeys returns, for each master of cl, n of k's keys whose slots
// it serves.
func clusterKeys(cl *redistest.Cluster, k *redislimit.Keyed, n int) [][]string {
	keys := make([][]string, len(cl.Servers))
	for _, i := range benchKeysOn(cl, k, n) {
		keys[i.master] = append(keys[i.master], i.key)
	}
	return keys
}

type keyOn struct {
	key    string
	master int
}

// benchKeysOn returns n keys on each master of cl.
func benchKeysOn(cl *redistest.Cluster, k *redislimit.Keyed, n int) []keyOn {
	count := make([]int, len(cl.Servers))
	var out []keyOn
	benchKeys(n*len(cl.Servers), func(key string) bool {
		m := cl.Owner(int(redislimit.KeySlot(k.RedisKey(key))))
		if count[m] == n {
			return false
		}
		count[m]++
		out = append(out, keyOn{key, m})
		return true
	})
	return out
}

// phase is what the callers of one group of keys saw in one phase.
type phase struct {
	ok, failed atomic.Int64
	slowest    atomic.Int64 // ns
	other      atomic.Value // an error that is neither a grant nor ErrUnavailable
	firstFail  atomic.Value // the first ErrUnavailable, for the messages
}

func (p *phase) saw(err error, took time.Duration) {
	switch {
	case err == nil:
		p.ok.Add(1)
	case errors.Is(err, redislimit.ErrUnavailable):
		p.failed.Add(1)
		p.firstFail.CompareAndSwap(nil, err)
	default:
		p.other.CompareAndSwap(nil, err)
	}
	for {
		s := p.slowest.Load()
		if int64(took) <= s || p.slowest.CompareAndSwap(s, int64(took)) {
			return
		}
	}
}

// TestHealthyMastersServeWhileOneIsDown stops one master of three
// (SIGSTOP), then kills it, then restarts it with its slots: keys on the
// two healthy masters never fail nor wait a call timeout, keys on the
// stopped one fail closed within the call timeout, and they serve again
// once it is back. Issue 26, item 3: one batch spanning every node, and
// one health for the whole client, failed about 99% of all keys.
func TestHealthyMastersServeWhileOneIsDown(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // first: it runs last
	cl := redistest.TestCluster(t, 3)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { c.Close() })
	down := cl.Servers[2]
	t.Cleanup(down.Continue)
	k, err := redislimit.NewKeyed(c, "down:", benchRate, benchBurst, redislimit.WithCallTimeout(clusterTimeout))
	require.NoError(t, err)
	t.Cleanup(func() { k.Close() })
	keys := clusterKeys(cl, k, 8)
	waitServing(t, k, keys[0][0], keys[1][0], keys[2][0])

	run := func(d time.Duration) (healthy, stopped *phase) {
		healthy, stopped = new(phase), new(phase)
		var wg sync.WaitGroup
		end := time.Now().Add(d)
		for m, ks := range keys {
			p := healthy
			if m == 2 {
				p = stopped
			}
			for g := range 4 {
				wg.Go(func() {
					for i := g; time.Now().Before(end); i++ {
						start := time.Now()
						_, err := k.Acquire(context.Background(), ks[i%len(ks)], 1)
						p.saw(err, time.Since(start))
					}
				})
			}
		}
		wg.Wait()
		return healthy, stopped
	}

	const span = 1500 * time.Millisecond
	all, _ := run(span)
	down.Stop()
	hung, hungDown := run(span)
	down.Kill()
	killed, killedDown := run(span / 3)
	for name, p := range map[string]*phase{"healthy": all, "hung": hung, "killed": killed} {
		assert.Nil(t, p.other.Load(), "%s: healthy masters' keys: only grants", name)
		assert.Zero(t, p.failed.Load(), "%s: healthy masters' keys never fail (first: %v)", name, p.firstFail.Load())
		assert.Less(t, time.Duration(p.slowest.Load()), clusterTimeout, "%s: healthy masters' keys never wait a call timeout", name)
	}
	for name, p := range map[string]*phase{"hung": hungDown, "killed": killedDown} {
		assert.Nil(t, p.other.Load(), "%s: the down master's keys fail closed", name)
		assert.Zero(t, p.ok.Load(), "%s: the down master's keys are not granted", name)
		assert.Positive(t, p.failed.Load(), name)
		assert.Less(t, time.Duration(p.slowest.Load()), failBound, "%s: the down master's keys fail within the call timeout", name)
	}
	t.Logf("healthy masters' keys, calls per %v: all healthy %d, one hung %d (%.0f%%), one killed %d per %v; the hung one's keys failed %d times",
		span, all.ok.Load(), hung.ok.Load(), 100*float64(hung.ok.Load())/float64(all.ok.Load()), killed.ok.Load(), span/3, hungDown.failed.Load())

	require.NoError(t, down.Restart())
	waitServing(t, k, keys[2]...)
	back, backDown := run(span / 3)
	assert.Zero(t, back.failed.Load(), "the healthy masters' keys serve (first failure: %v)", back.firstFail.Load())
	assert.Zero(t, backDown.failed.Load(), "the master's keys serve once it is back (first failure: %v)", backDown.firstFail.Load())
	assert.Positive(t, backDown.ok.Load())
}

// waitServing waits until one Acquire of each key is granted: the
// client's connections dialled, the scripts loaded, a restarted master
// back; bounded, so that a master that never comes back fails the test.
func waitServing(t testing.TB, k *redislimit.Keyed, keys ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, key := range keys {
		for {
			_, err := k.Acquire(context.Background(), key, 1)
			if err == nil {
				break
			}
			require.True(t, time.Now().Before(deadline), "key %q still failing: %v", key, err)
			time.Sleep(50 * time.Millisecond) // polling a restart, not fixing a race
		}
	}
}
