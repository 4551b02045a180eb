package redislimit_test

import (
	"context"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// BenchmarkClusterNodeDown measures one Acquire, among 64 callers, on
// keys of the two healthy masters of a three-master Cluster, while four
// more callers ask for keys of the third: answered ("all-healthy"), or
// stopped by SIGSTOP for the whole run ("one-stopped"), where its keys
// fail at once or at the call timeout. The two, from one run, are what a
// master down costs the others (docs/distributed.md).
//
//	go test -run '^$' -bench ClusterNodeDown -count 5 . | benchstat /dev/stdin
func BenchmarkClusterNodeDown(b *testing.B) {
	cl := redistest.TestCluster(b, 3)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	b.Cleanup(func() { c.Close() })
	down := cl.Servers[2]
	b.Cleanup(down.Continue)
	k, err := redislimit.NewKeyed(c, "bench:", benchRate, benchBurst, redislimit.WithCallTimeout(clusterTimeout))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { k.Close() })
	var healthy, other []string
	for _, ko := range benchKeysOn(cl, k, 100) {
		if ko.master == 2 {
			other = append(other, ko.key)
		} else {
			healthy = append(healthy, ko.key)
		}
	}
	waitServing(b, k, healthy[0], healthy[len(healthy)-1], other[0])
	for _, stop := range []bool{false, true} {
		name := "all-healthy"
		if stop {
			name = "one-stopped"
		}
		b.Run(name, func(b *testing.B) {
			if stop {
				down.Stop()
				defer down.Continue()
			}
			done := make(chan struct{})
			var wg sync.WaitGroup
			for g := range benchOthers {
				wg.Go(func() {
					for i := g; ; i++ {
						select {
						case <-done:
							return
						default:
						}
						_, _ = k.Acquire(context.Background(), other[i%len(other)], 1)
					}
				})
			}
			runCallers(b, 64, func(ctx context.Context, i int) error {
				_, err := k.Acquire(ctx, healthy[i%len(healthy)], 1)
				return err
			})
			// Untimed: a caller of the stopped master's keys may be
			// waiting out a call timeout.
			b.StopTimer()
			close(done)
			wg.Wait()
		})
	}
}

var benchOthers = 4
