package redislimit_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// script runs the batch script on key as the limiter would, with p, c and
// tau (whole µs and ticks) for its quota, deciding at now (0: Redis TIME),
// with floor as its floor argument if it is not "" (floorArg).
type script struct {
	t          *testing.T
	c          *redis.Client
	key        string
	p, cc      int64
	tauW, tauF int64
	floor      string
}

// floorArg is the batch script's floor argument for W µs and F ticks.
func floorArg(w, f int64) string { return redislimit.PackValue(w, f, 0, 0)[:16] }

type reply struct {
	now   int64
	value string
	gave  bool
	codes []int64
}

func (s script) run(now int64, give string, gw, gf int64, reqs string) reply {
	s.t.Helper()
	args := []any{s.p, s.cc, s.tauW, s.tauF, now, give, gw, gf, reqs}
	if s.floor != "" {
		args = append(args, s.floor)
	}
	res, err := s.c.EvalSha(context.Background(), redislimit.ScriptSHA, []string{s.key}, args...).Text()
	if redis.HasErrorPrefix(err, "NOSCRIPT") {
		res, err = s.c.Eval(context.Background(), redislimit.Script, []string{s.key}, args...).Text()
	}
	require.NoError(s.t, err)
	n := requests(s.t, reqs)
	head := floats(s.t, res[:16+8*n])
	r := reply{now: head[0], value: res[16+8*n:], gave: head[1] == 1, codes: head[2:]}
	if r.value != "" {
		require.Len(s.t, r.value, 32)
	}
	return r
}

// requests counts the requests of a list "cost:maxwait[:n],...".
func requests(t *testing.T, reqs string) int {
	t.Helper()
	n := 0
	for _, e := range strings.Split(reqs, ",") {
		if e == "" {
			continue
		}
		f := strings.Split(e, ":")
		if len(f) == 3 {
			k, err := strconv.Atoi(f[2])
			require.NoError(t, err)
			n += k
			continue
		}
		n++
	}
	return n
}

// t0 is an instant in µs since 1970: 2026-12-01.
const t0 = int64(1_796_083_200_000_000)

func TestScriptGrantsReservesAndRefusesInOrder(t *testing.T) {
	c := redistest.Test(t).Client(t)
	// 10/s: one unit is 100 000 µs exactly (P = 100 000 ticks, C = 1 per
	// µs); burst 2.
	s := script{t: t, c: c, key: "k", p: 100_000, cc: 1, tauW: 200_000}
	ran := time.Now()
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
	assert.Equal(t, redislimit.PackValue(t0+300_000, 0, 1, t0+300_000), r.value)

	// The key expires at its reset time, the TAT, rounded up to the ms:
	// 300 ms after the script ran, less the time since, however long that
	// was on this machine.
	pttl := c.PTTL(context.Background(), "k").Val()
	since := time.Since(ran)
	assert.LessOrEqual(t, pttl, 300*time.Millisecond)
	if since < 300*time.Millisecond {
		assert.GreaterOrEqual(t, pttl, 300*time.Millisecond-since-time.Millisecond)
	}
}

func TestScriptIsExactAtRatesWithFractionalIntervals(t *testing.T) {
	c := redistest.Test(t).Client(t)
	// 3/s: one unit is 333 333⅓ µs: P = 1 000 000 ticks of ⅓ µs.
	s := script{t: t, c: c, key: "k3", p: 1_000_000, cc: 3, tauW: 333_333, tauF: 1}
	r := s.run(t0, "", 0, 0, "1:-1,1:-1,1:-1,1:-1")
	// Admissions at 0, ⅓ s, ⅔ s and 1 s, each rounded up to the µs: never
	// early, and no drift: the fourth is at exactly one second.
	assert.Equal(t, []int64{t0, t0 + 333_334, t0 + 666_667, t0 + 1_000_000}, r.codes)
	assert.Equal(t, redislimit.PackValue(t0+1_333_333, 1, 1, t0+1_333_334), r.value, "TAT 4/3 s ahead: 1 333 333 µs and one tick")

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
	ident := redislimit.ValueKey(w, f, n)

	// Someone else writes: the value changes, and the give-back does not
	// apply (the last slot is no longer the last admission).
	other := s.run(t0, "", 0, 0, "1:-1")
	require.Equal(t, []int64{t0 + 300_000}, other.codes)
	r = s.run(t0, ident, 100_000, 0, "")
	assert.False(t, r.gave, "something was admitted behind: nothing comes back")

	// Give back the last 200 ms while the key still holds the value.
	w, f, n, _, _ = value(t, c, "g")
	r = s.run(t0+50_000, redislimit.ValueKey(w, f, n), 200_000, 0, "")
	assert.True(t, r.gave)
	w2, _, n2, m2, _ := value(t, c, "g")
	assert.Equal(t, t0+200_000, w2, "the TAT moved back 200 ms")
	assert.Equal(t, n+1, n2, "the write count moved on")
	assert.Equal(t, t0+400_000, m2, "the key lives on until the latest TAT it held")

	// A give-back never moves the TAT before now: the past is not banked.
	r = s.run(t0+150_000, redislimit.ValueKey(w2, 0, n2), 10_000_000, 0, "1:0")
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

	// Not four float64s of integers in range: a number, text values of
	// three fields and of ticks beyond C, 32 bytes of text (far beyond
	// 2^53 as doubles), a fraction, a NaN.
	nan := redislimit.PackValue(t0, 0, 1, t0)[:24] + "\x00\x00\x00\x00\x00\x00\xf8\x7f"
	frac := redislimit.PackValue(t0, 0, 1, t0)
	frac = frac[:8] + "\x00\x00\x00\x00\x00\x00\xe0\x3f" + frac[16:] // F = 0.5
	for _, v := range []string{"1.5e15", "1796083200000000:0:1", "1796083200000000:3:1:1796083200000000", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", nan, frac} {
		require.NoError(t, c.Set(ctx, "foreign", v, 0).Err())
		_, err = c.Eval(ctx, redislimit.Script, []string{"foreign"}, 100_000, 3, 100_000, 0, t0, "", 0, 0, "1:-1").Result()
		assert.ErrorContains(t, err, "does not hold a sluice TAT", "%q", v)
		_, err = c.Eval(ctx, redislimit.LeanScript, []string{"foreign"}, redislimit.LeanArgs(3, 100_000, 0, t0, -1, 100_000, 0, 0, 0)).Result()
		assert.ErrorContains(t, err, "does not hold a sluice TAT", "%q", v)
	}
	require.NoError(t, c.LPush(ctx, "list", "x").Err())
	_, err = c.Eval(ctx, redislimit.Script, []string{"list"}, 100_000, 1, 100_000, 0, t0, "", 0, 0, "1:-1").Result()
	assert.ErrorContains(t, err, "WRONGTYPE")
}

// TestLeanScriptDecidesAsTheBatchScript runs random lone requests (costs,
// max waits, instants, and for a third of them a floor from a second
// behind to two ahead) through the one-request script on one key and
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
		var fw, ff int64
		batch.floor = ""
		if rng.IntN(3) == 0 {
			fw, ff = now-1_000_000+rng.Int64N(3_000_000), rng.Int64N(cc)
			batch.floor = floorArg(fw, ff)
		}
		want := batch.run(now, "", 0, 0, fmt.Sprintf("%d:%d", cost, mw))
		res, err := c.EvalSha(ctx, redislimit.LeanScriptSHA, []string{"lean"},
			redislimit.LeanArgs(cc, tauW, tauF, now, mw, cost*p/cc, cost*p%cc, fw, ff)).Text()
		require.NoError(t, err)
		require.Len(t, res, 56, "request %d", i)
		head := floats(t, res[:24])
		require.Equal(t, now, head[0], "request %d", i)
		require.Zero(t, head[1], "request %d: no give-back", i)
		require.Equal(t, want.codes[0], head[2], "request %d: cost %d, maxwait %d", i, cost, mw)
		require.Equal(t, want.value, res[24:], "request %d", i)
	}
}

// sevenPerSecond is the quota of the run-length tests, 7/s with burst 5
// (P = 1 000 000 ticks of 1/7 µs): the batch script on key, and lean, which
// decides one request at now through the lean script on a key of its own,
// as the limiter would (a cost above the burst is never sent: 0).
func sevenPerSecond(t *testing.T, c *redis.Client, key string) (s script, lean func(now, cost, mw int64) int64) {
	const p, cc = 1_000_000, 7
	tau := int64(5 * p)
	require.NoError(t, c.ScriptLoad(context.Background(), redislimit.LeanScript).Err())
	s = script{t: t, c: c, key: key, p: p, cc: cc, tauW: tau / cc, tauF: tau % cc}
	lean = func(now, cost, mw int64) int64 {
		if cost > 5 {
			return 0
		}
		res, err := c.EvalSha(context.Background(), redislimit.LeanScriptSHA, []string{"lean:" + key},
			redislimit.LeanArgs(cc, tau/cc, tau%cc, now, mw, cost*p/cc, cost*p%cc, 0, 0)).Text()
		require.NoError(t, err)
		return floats(t, res[:24])[2]
	}
	return s, lean
}

// TestScriptRunsDecideAsSingleEntries sends random lists in which requests
// alike in a row go as one entry "cost:maxwait:n" to one key, the same
// requests one entry each to another, and one lean call each to a third,
// at the same instants, and requires the same codes (and of the first
// two, the same values): the batch script grants the head of a run that
// fits now in one step, the lean script decides request by request.
func TestScriptRunsDecideAsSingleEntries(t *testing.T) {
	c := redistest.Test(t).Client(t)
	runs, decideLean := sevenPerSecond(t, c, "runs")
	single := runs
	single.key = "single"
	rng := rand.New(rand.NewPCG(7, 11))
	now := t0
	for i := range 500 {
		now += rng.Int64N(3_000_000)
		var withRuns, each []string
		var lean []int64
		for range 1 + rng.IntN(4) {
			cost := 1 + rng.Int64N(6) // 6 is above the burst: never admitted
			mw := []int64{-1, 0, rng.Int64N(2_000_000)}[rng.IntN(3)]
			n := 1 + rng.IntN(8)
			if n == 1 {
				withRuns = append(withRuns, fmt.Sprintf("%d:%d", cost, mw))
			} else {
				withRuns = append(withRuns, fmt.Sprintf("%d:%d:%d", cost, mw, n))
			}
			for range n {
				each = append(each, fmt.Sprintf("%d:%d", cost, mw))
				lean = append(lean, decideLean(now, cost, mw))
			}
		}
		got := runs.run(now, "", 0, 0, strings.Join(withRuns, ","))
		want := single.run(now, "", 0, 0, strings.Join(each, ","))
		require.Equal(t, want.codes, got.codes, "call %d: %v", i, withRuns)
		require.Equal(t, want.value, got.value, "call %d", i)
		require.Equal(t, lean, got.codes, "call %d: %v, one by one", i, withRuns)
	}
}

// TestScriptAnswersLongCallsInOrder: a call whose codes alternate between
// runs granted now (answered as one repeated string) and requests decided
// one by one (packed 200 at a time) answers every request in order, as the
// lean script decides them one by one.
func TestScriptAnswersLongCallsInOrder(t *testing.T) {
	s, lean := sevenPerSecond(t, redistest.Test(t).Client(t), "long")
	// 250 never admitted, 3 granted now, 1 never, 2 granted now and 208
	// refused, 1 never, and 2 reserved: more than one chunk of codes on
	// both sides of each run.
	type entry struct{ cost, mw, n int64 }
	entries := []entry{{6, -1, 250}, {1, -1, 3}, {6, -1, 1}, {1, 0, 210}, {6, -1, 1}, {1, -1, 2}}
	var list []string
	var want []int64
	for _, e := range entries {
		list = append(list, fmt.Sprintf("%d:%d:%d", e.cost, e.mw, e.n))
		for range e.n {
			want = append(want, lean(t0, e.cost, e.mw))
		}
	}
	got := s.run(t0, "", 0, 0, strings.Join(list, ","))
	require.Len(t, got.codes, 467)
	require.Equal(t, want, got.codes)
	assert.Equal(t, t0, got.codes[250], "the first run is granted now")
	assert.Less(t, got.codes[300], int64(0), "the 1:0 beyond the burst are refused")
	assert.Greater(t, got.codes[466], t0, "the last are reserved")
}

// TestScriptReadsTheTextFormOfEarlierReleases: a key written as text
// "W:F:N:M" decides as the same value packed, is answered packed even by a
// call that writes nothing, and is stored packed by the next write.
func TestScriptReadsTheTextFormOfEarlierReleases(t *testing.T) {
	c := redistest.Test(t).Client(t)
	ctx := context.Background()
	// 3/s, burst 2: P = 1 000 000 ticks of ⅓ µs; tau = 2 units.
	s := script{t: t, c: c, key: "text", p: 1_000_000, cc: 3, tauW: 666_666, tauF: 2}
	text := fmt.Sprintf("%d:1:7:%d", t0+666_666, t0+666_667) // two units ahead: full
	require.NoError(t, c.Set(ctx, "text", text, 0).Err())
	r := s.run(t0, "", 0, 0, "1:0")
	assert.Equal(t, []int64{-333_333}, r.codes, "refused: the TAT plus a unit is 333 333 µs beyond tau")
	assert.Equal(t, redislimit.PackValue(t0+666_666, 1, 7, t0+666_667), r.value, "answered packed")
	assert.Equal(t, text, c.Get(ctx, "text").Val(), "nothing written: the key keeps its text")

	r = s.run(t0+333_333, "", 0, 0, "1:-1")
	assert.Equal(t, []int64{t0 + 333_333}, r.codes, "granted at once, 333 333 µs later")
	w, f, n, m, ok := value(t, c, "text")
	require.True(t, ok, "stored packed")
	assert.Equal(t, []int64{t0 + 999_999, 2, 8, t0 + 1_000_000}, []int64{w, f, n, m}, "one unit (333 333 µs and a tick) after the TAT")
}
