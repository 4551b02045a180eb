package redislimit_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// When Redis loses a key's state (FLUSHALL, a restart without
// persistence) while this process holds reservations seconds ahead, the
// calls' floor puts the TAT back where this process's admissions left it:
// the grants, at the instants Redis admitted them, stay within burst +
// rate·d in every window, plus at most one burst, and in total within that
// by Redis TIME. Without the floor (issue 26) a FLUSHALL after 500 callers
// took 5 s of reservations gave 1,118 grants against 621 allowed.
func TestAfterAFlushAllGrantsStayWithinTheBoundPlusOneBurst(t *testing.T) {
	for _, sub := range lossSubjects {
		t.Run(sub.name, func(t *testing.T) {
			s := redistest.Test(t)
			admin := s.Client(t)
			lossRun(t, s.Client(t), admin, sub, func() {
				require.NoError(t, admin.FlushAll(context.Background()).Err())
			})
		})
	}
}

// A restart without persistence loses every key and every script: the
// next call finds the key empty (and NOSCRIPT), and its floor puts the TAT
// back as after a FLUSHALL.
func TestAfterARestartGrantsStayWithinTheBoundPlusOneBurst(t *testing.T) {
	for _, sub := range lossSubjects {
		t.Run(sub.name, func(t *testing.T) {
			s := redistest.Test(t)
			admin := s.Client(t)
			lossRun(t, s.Client(t), admin, sub, func() { require.NoError(t, s.Restart()) })
		})
	}
}

// lossSubject makes a limiter on one key and says which Redis key holds
// its state.
type lossSubject struct {
	name string
	make func(t *testing.T, c redis.UniversalClient, rate algorithms.Rate, burst int64, hook redislimit.Option) (acquire func(context.Context) error, key string, closeIt func())
}

var lossSubjects = []lossSubject{
	{"Limiter", func(t *testing.T, c redis.UniversalClient, rate algorithms.Rate, burst int64, hook redislimit.Option) (func(context.Context) error, string, func()) {
		l := newLimiter(t, c, "lost", rate, burst, redislimit.WithProbeInterval(0), hook)
		return func(ctx context.Context) error { _, err := l.Acquire(ctx, 1); return err }, "lost", func() { l.Close() }
	}},
	{"Keyed", func(t *testing.T, c redis.UniversalClient, rate algorithms.Rate, burst int64, hook redislimit.Option) (func(context.Context) error, string, func()) {
		k, err := redislimit.NewKeyed(c, "lost:", rate, burst, redislimit.WithProbeInterval(0), hook)
		require.NoError(t, err)
		t.Cleanup(func() { k.Close() })
		return func(ctx context.Context) error { _, err := k.Acquire(ctx, "k", 1); return err }, k.RedisKey("k"), func() { k.Close() }
	}},
}

// lossRun plays held callers that each Acquire one unit, reserved up to
// held/rate ahead; once Redis holds all of them (the key's TAT says so),
// lose loses the key, and as many callers again as after asks for one
// unit each. Then it checks the bound over every window of the grants.
func lossRun(t *testing.T, c, admin *redis.Client, sub lossSubject, lose func()) {
	perSec := testutil.Volume(200, 100)
	burst := testutil.Volume(20, 21)
	held := testutil.Volume(200, 500)
	after := testutil.Volume(100, 100)
	ctx := context.Background()
	var log grantLog
	acquire, key, closeIt := sub.make(t, c, algorithms.PerSecond(perSec), burst, log.hook())
	t0, err := admin.Time(ctx).Result()
	require.NoError(t, err)

	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []error
	callers := func(n int64) {
		for range n {
			wg.Go(func() {
				if err := acquire(ctx); err != nil {
					mu.Lock()
					failed = append(failed, err)
					mu.Unlock()
				}
			})
		}
	}
	callers(held)
	// Every admission moves the TAT on by 1/rate from no earlier than t0.
	deep := t0.UnixMicro() + held*1_000_000/perSec
	waitFor(t, "Redis holds every reservation", func() bool {
		w, _, _, _, ok := value(t, admin, key)
		return ok && w >= deep
	})
	lose()
	callers(after)
	wg.Wait()
	closeIt()
	t1, err := admin.Time(ctx).Result()
	require.NoError(t, err)

	for _, err := range failed {
		// A restart breaks the pooled connections: a call on one may fail
		// before Redis decides. Nothing else may fail.
		require.ErrorIs(t, err, redislimit.ErrUnavailable)
	}
	grants := log.sorted()
	testutil.ReportDecisions(t, int64(len(grants)))
	worst := fullestWindow(grants, perSec, burst)
	bound := burst + int64(t1.Sub(t0))*perSec/int64(time.Second)
	t.Logf("%s, %d/s, burst %d: %d callers reserved %v ahead, then %d more: %d grants (%d failed) against %d allowed by Redis TIME; fullest window %+d against burst + rate·d",
		sub.name, perSec, burst, held, time.Duration(held)*time.Second/time.Duration(perSec), after,
		len(grants), len(failed), bound, worst)
	assert.LessOrEqual(t, worst, burst, "no window above burst + rate·d by more than a burst")
	assert.LessOrEqual(t, int64(len(grants)), bound+burst, "granted ≤ burst + rate·elapsed, plus a burst")
	assert.Positive(t, int64(len(grants))-held, "the callers after the loss were granted")
}

// fullestWindow returns the most that any window [grants[i], grants[j]]
// (sorted Redis µs) holds beyond burst + rate·d. Redis admits at exact
// instants and reports them rounded up to the µs, so the exact window is
// less than a µs longer than the one measured.
func fullestWindow(grants []int64, perSec, burst int64) int64 {
	worst := int64(-burst)
	for i := range grants {
		for j := i; j < len(grants); j++ {
			d := grants[j] - grants[i] + 1
			worst = max(worst, int64(j-i+1)-(burst+d*perSec/1_000_000))
		}
	}
	return worst
}

// waitFor polls cond until it holds: for a state of Redis, which sends no
// event. It fails the test after a minute, far beyond any run's need.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	limit := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(limit) {
			require.FailNow(t, fmt.Sprintf("waited a minute for: %s", what))
		}
		time.Sleep(time.Millisecond)
	}
}
