package sluiceotel_test

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/sluiceotel"
)

// Collections made while callers hit the limiter see its counters only
// grow, and the last one after the traffic sees every call: reading Stats
// at collection time races with nothing (run with -race). In the bubble
// no time passes while the callers run, so the burst is all there is.
func TestCollectionsDuringTrafficOnlyGrowAndEndExact(t *testing.T) {
	synctest.Test(t, collectionsDuringTraffic)
}

func collectionsDuringTraffic(t *testing.T) {
	mp, reader := newReader(t)
	gcra, err := algorithms.NewGCRA(algorithms.PerSecond(1), 500) // 500 granted, then refusals
	if err != nil {
		t.Fatal(err)
	}
	lim := actor.MustNew(gcra)
	defer lim.Close()
	reg, err := sluiceotel.Register(mp.Meter("test"), sluiceotel.Limiter("api", lim.Stats))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()

	const callers, calls = 4, 250
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range calls {
				lim.Allow()
			}
		})
	}
	var last int64
	for range 50 {
		n := value(t, collect(t, reader), "counter sluice.limiter.granted{sluice.limiter.name=api}")
		if n < last {
			t.Fatalf("granted went from %d down to %d", last, n)
		}
		last = n
	}
	wg.Wait()
	got := collect(t, reader)
	granted := value(t, got, "counter sluice.limiter.granted{sluice.limiter.name=api}")
	rejected := value(t, got, "counter sluice.limiter.rejected{sluice.limiter.name=api}")
	if granted != 500 || rejected != callers*calls-500 {
		t.Errorf("after %d calls: granted %d, rejected %d", callers*calls, granted, rejected)
	}
}

// value returns the value of the line that starts with series.
func value(t *testing.T, lines []string, series string) int64 {
	t.Helper()
	for _, l := range lines {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in %q", series, lines)
	return 0
}
