package redislimit_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// script runs the batch script on key as the limiter would, with p, c and
// tau (whole µs and ticks) for its quota, deciding at now (0: Redis TIME).
type script struct {
	t          *testing.T
	c          *redis.Client
	key        string
	p, cc      int64
	tauW, tauF int64
}

type reply struct {
	now   int64
	value string
	gave  bool
	codes []int64
}

func (s script) run(now int64, give string, gw, gf int64, reqs string) reply {
	s.t.Helper()
	res, err := s.c.EvalSha(context.Background(), redislimit.ScriptSHA, []string{s.key},
		s.p, s.cc, s.tauW, s.tauF, now, give, gw, gf, reqs).Slice()
	if redis.HasErrorPrefix(err, "NOSCRIPT") {
		res, err = s.c.Eval(context.Background(), redislimit.Script, []string{s.key},
			s.p, s.cc, s.tauW, s.tauF, now, give, gw, gf, reqs).Slice()
	}
	require.NoError(s.t, err)
	r := reply{now: res[0].(int64), value: res[1].(string), gave: res[2].(int64) == 1}
	for _, v := range res[3:] {
		r.codes = append(r.codes, v.(int64))
	}
	return r
}

// t0 is an instant in µs since 1970: 2026-12-01.
const t0 = int64(1_796_083_200_000_000)

func TestScriptGrantsReservesAndRefusesInOrder(t *testing.T) {
	c := redistest.Test(t).Client(t)
	// 10/s: one unit is 100 000 µs exactly (P = 100 000 ticks, C = 1 per
	// µs); burst 2.
	s := script{t: t, c: c, key: "k", p: 100_000, cc: 1, tauW: 200_000}
	r := s.run(t0, "", 0, 0, "1:-1,1:-1,1:-1,1:0,3:-1,1:150000")
	assert.Equal(t, t0, r.now)
	assert.Equal(t, []int64{
		t0,           // granted now
		t0,           // granted now: the burst
		t0 + 100_000, // reserved: the TAT moved on
		-200_000,     // refused: maxwait 0, and it would wait 200 ms
		0,            // never: 3 is above the burst
		-200_000,     // refused: allowed 150 ms; the refusal before left the TAT alone
	}, r.codes)
	assert.Equal(t, fmt.Sprintf("%d:0:1:%d", t0+300_000, t0+300_000), r.value)

	// The key expires at its reset time, the TAT, rounded up to the ms.
	pttl := c.PTTL(context.Background(), "k").Val()
	assert.LessOrEqual(t, pttl.Milliseconds(), int64(300))
	assert.Greater(t, pttl.Milliseconds(), int64(200))
}

func TestScriptIsExactAtRatesWithFractionalIntervals(t *testing.T) {
	c := redistest.Test(t).Client(t)
	// 3/s: one unit is 333 333⅓ µs: P = 1 000 000 ticks of ⅓ µs.
	s := script{t: t, c: c, key: "k3", p: 1_000_000, cc: 3, tauW: 333_333, tauF: 1}
	r := s.run(t0, "", 0, 0, "1:-1,1:-1,1:-1,1:-1")
	// Admissions at 0, ⅓ s, ⅔ s and 1 s, each rounded up to the µs: never
	// early, and no drift: the fourth is at exactly one second.
	assert.Equal(t, []int64{t0, t0 + 333_334, t0 + 666_667, t0 + 1_000_000}, r.codes)
	assert.Equal(t, fmt.Sprintf("%d:1:1:%d", t0+1_333_333, t0+1_333_334), r.value, "TAT 4/3 s ahead: 1 333 333 µs and one tick")

	// Three million units later, still exact: 3 000 000 at 3/s is 10^6 s.
	far := script{t: t, c: c, key: "k3far", p: 1_000_000, cc: 3, tauW: 333_333, tauF: 1}
	var reqs string
	for i := range 1000 {
		if i > 0 {
			reqs += ","
		}
		reqs += "1:-1"
	}
	r = far.run(t0, "", 0, 0, reqs)
	assert.Equal(t, t0+333_333*999+333, r.codes[999], "the 1000th unit at 999/3 s, rounded up")
}

// redis_rate keeps time as floating seconds since 2017 and reads Remaining
// from a float division, so that at some instants a full bucket admits one
// fewer than its burst. This script keeps integers: at every instant and
// rate, a fresh key admits exactly burst units at once, and the next is
// refused with the exact wait of one interval.
func TestScriptAdmitsExactlyTheBurstAtAnyInstant(t *testing.T) {
	c := redistest.Test(t).Client(t)
	for _, tc := range []struct {
		name   string
		p, cc  int64 // one unit: p/cc µs
		burst  int64
		retryW int64 // the wait of the unit after the burst, rounded up
	}{
		{"10/s", 100_000, 1, 10, 100_000},
		{"3/s", 1_000_000, 3, 3, 333_334},
		{"7/s", 1_000_000, 7, 5, 142_858},
		{"100/min", 600_000, 1, 100, 600_000},
		{"1000/s", 1_000, 1, 1000, 1_000},
	} {
		for _, now := range []int64{t0, t0 + 1, t0 + 999_999, 4_102_444_800_000_000 /* 2100 */, 8_000_000_000_000_000} {
			key := fmt.Sprintf("b:%s:%d", tc.name, now)
			tau := tc.burst * tc.p
			s := script{t: t, c: c, key: key, p: tc.p, cc: tc.cc, tauW: tau / tc.cc, tauF: tau % tc.cc}
			reqs := ""
			for i := int64(0); i <= tc.burst; i++ {
				if i > 0 {
					reqs += ","
				}
				reqs += "1:0"
			}
			r := s.run(now, "", 0, 0, reqs)
			for i := int64(0); i < tc.burst; i++ {
				require.Equal(t, now, r.codes[i], "%s at %d: unit %d of the burst", tc.name, now, i+1)
			}
			assert.Equal(t, -tc.retryW, r.codes[tc.burst], "%s at %d: the unit after the burst", tc.name, now)
			_, _, _, _, _ = value(t, c, key)
		}
	}
}

func TestScriptGivesBackOnlyWhatNothingWasAdmittedBehind(t *testing.T) {
	c := redistest.Test(t).Client(t)
	s := script{t: t, c: c, key: "g", p: 100_000, cc: 1, tauW: 100_000} // 10/s, burst 1
	r := s.run(t0, "", 0, 0, "1:-1,1:-1,1:-1")                          // at t0, t0+100ms, t0+200ms
	require.Equal(t, []int64{t0, t0 + 100_000, t0 + 200_000}, r.codes)
	w, f, n, m, ok := value(t, c, "g")
	require.True(t, ok)
	assert.Equal(t, []int64{t0 + 300_000, 0, 1, t0 + 300_000}, []int64{w, f, n, m})
	ident := fmt.Sprintf("%d:%d:%d", w, f, n)

	// Someone else writes: the value changes, and the give-back does not
	// apply (the last slot is no longer the last admission).
	other := s.run(t0, "", 0, 0, "1:-1")
	require.Equal(t, []int64{t0 + 300_000}, other.codes)
	r = s.run(t0, ident, 100_000, 0, "")
	assert.False(t, r.gave, "something was admitted behind: nothing comes back")

	// Give back the last 200 ms while the key still holds the value.
	w, f, n, _, _ = value(t, c, "g")
	r = s.run(t0+50_000, fmt.Sprintf("%d:%d:%d", w, f, n), 200_000, 0, "")
	assert.True(t, r.gave)
	w2, _, n2, m2, _ := value(t, c, "g")
	assert.Equal(t, t0+200_000, w2, "the TAT moved back 200 ms")
	assert.Equal(t, n+1, n2, "the write count moved on")
	assert.Equal(t, t0+400_000, m2, "the key lives on until the latest TAT it held")

	// A give-back never moves the TAT before now: the past is not banked.
	r = s.run(t0+150_000, fmt.Sprintf("%d:0:%d", w2, n2), 10_000_000, 0, "1:0")
	assert.True(t, r.gave)
	assert.Equal(t, []int64{t0 + 150_000}, r.codes, "granted at once: the TAT is back at now, not before")
	w3, _, _, _, _ := value(t, c, "g")
	assert.Equal(t, t0+250_000, w3, "one unit after now, not one unit after a TAT in the past")
}

func TestScriptReadsRedisTimeAndRefusesForeignValues(t *testing.T) {
	c := redistest.Test(t).Client(t)
	ctx := context.Background()
	s := script{t: t, c: c, key: "time", p: 100_000, cc: 1, tauW: 100_000}
	before, err := c.Time(ctx).Result()
	require.NoError(t, err)
	r := s.run(0, "", 0, 0, "1:-1")
	after, err := c.Time(ctx).Result()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, r.now, before.UnixMicro())
	assert.LessOrEqual(t, r.now, after.UnixMicro())
	assert.Equal(t, []int64{r.now}, r.codes)

	require.NoError(t, c.Set(ctx, "foreign", "1.5e15", 0).Err())
	_, err = c.Eval(ctx, redislimit.Script, []string{"foreign"}, 100_000, 1, 100_000, 0, t0, "", 0, 0, "1:-1").Result()
	assert.ErrorContains(t, err, "does not hold a sluice TAT")
	require.NoError(t, c.LPush(ctx, "list", "x").Err())
	_, err = c.Eval(ctx, redislimit.Script, []string{"list"}, 100_000, 1, 100_000, 0, t0, "", 0, 0, "1:-1").Result()
	assert.ErrorContains(t, err, "WRONGTYPE")
}

// TestLeanScriptDecidesAsTheBatchScript runs random lone requests (costs,
// max waits, instants) through the one-request script on one key and
// through the batch script on another, and requires the same answers and
// the same values.
func TestLeanScriptDecidesAsTheBatchScript(t *testing.T) {
	c := redistest.Test(t).Client(t)
	ctx := context.Background()
	require.NoError(t, c.ScriptLoad(ctx, redislimit.LeanScript).Err())
	// 3/s, burst 4: P = 1 000 000 ticks of ⅓ µs, tau = 4 units.
	const p, cc = 1_000_000, 3
	tauW, tauF := int64(4*p/cc), int64(4*p%cc)
	batch := script{t: t, c: c, key: "batch", p: p, cc: cc, tauW: tauW, tauF: tauF}
	rng := rand.New(rand.NewPCG(3, 5))
	now := t0
	for i := range 2000 {
		now += rng.Int64N(700_000)
		cost := 1 + rng.Int64N(4)
		mw := []int64{-1, 0, rng.Int64N(1_500_000)}[rng.IntN(3)]
		want := batch.run(now, "", 0, 0, fmt.Sprintf("%d:%d", cost, mw))
		res, err := c.EvalSha(ctx, redislimit.LeanScriptSHA, []string{"lean"},
			cc, tauW, tauF, now, mw, cost*p/cc, cost*p%cc).Slice()
		require.NoError(t, err)
		require.Equal(t, want.codes[0], res[3].(int64), "request %d: cost %d, maxwait %d", i, cost, mw)
		require.Equal(t, want.value, res[1].(string), "request %d", i)
	}
}
