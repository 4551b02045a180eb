package redislimit_test

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// refused runs script on key with args and checks that it failed with an
// error naming want, and that the key is as it was: fail closed, never an
// admission.
func refused(t *testing.T, c *redis.Client, script, key, want string, args ...any) {
	t.Helper()
	ctx := context.Background()
	before, _ := c.Dump(ctx, key).Result()
	res, err := c.Eval(ctx, script, []string{key}, args...).Result()
	assert.ErrorContains(t, err, want, "answered %v", res)
	after, _ := c.Dump(ctx, key).Result()
	assert.Equal(t, before, after, "the key changed")
}

// The window script refuses a key whose fields it cannot have written:
// garbage, negative totals and id ranges, truncated events, a key of
// another type. (A total that is a plausible integer but not the events'
// sum is found only by a call that reads every event: window.lua.) Before (issue 26 item 6),
// tot=-1000 granted 1,010 against a limit of 10 and hi=-1000 dropped the
// key and started again.
func TestWindowScriptRefusesStatesItCannotHaveWritten(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t)
	ctx := context.Background()
	const t0, w = 1_700_000_000_000_000, 1_000_000
	fresh := func(key string) {
		require.NoError(t, c.Del(ctx, key).Err())
		reqs := strings.TrimSuffix(strings.Repeat("1:-1,", 25), ",") // 10 now, 15 reserved
		require.NoError(t, c.Eval(ctx, redislimit.WindowScript, []string{key}, 10, w, t0, "", reqs, "", 0).Err())
	}
	for _, tc := range []struct{ name, field, value string }{
		{"garbage epoch", "e", "x"},
		{"negative total", "tot", "-1000"},
		{"negative latest id", "hi", "-1000"},
		{"oldest id zero", "lo", "0"},
		{"fractional total", "tot", "12.5"},
		{"NaN total", "tot", "nan"},
		{"huge total", "tot", "1e300"},
		{"truncated events", "events", "1700000001:"},
		{"garbage events", "events", "zz"},
		{"events with a negative amount", "events", "1700000001000000:-5:0"},
		{"garbage pause", "hold", "soon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "win:" + tc.name
			fresh(key)
			if tc.field == "events" {
				// Every event, since a call reads only those it needs (a
				// broken one it never reads it never decides on either).
				for id := 1; id <= 25; id++ {
					require.NoError(t, c.HSet(ctx, key, strconv.Itoa(id), tc.value).Err())
				}
			} else {
				require.NoError(t, c.HSet(ctx, key, tc.field, tc.value).Err())
			}
			for _, call := range [][]any{
				{10, w, t0, "", "1:-1", "", 0},                        // a reservation
				{10, w, t0 + w, "", "1:0", "", 0},                     // the window passed: room now
				{10, w, t0, "", "", "1700000000000000:15", 0},         // a move
				{10, w, t0, "1700000000000000:12:0:1", "1:-1", "", 0}, // a settlement
			} {
				refused(t, c, redislimit.WindowScript, key, "does not hold a sluice window", call...)
			}
		})
	}
	require.NoError(t, c.Set(ctx, "win:string", "x", 0).Err())
	refused(t, c, redislimit.WindowScript, "win:string", "WRONGTYPE", 10, w, t0, "", "1:-1", "", 0)
}

// Arguments no limiter sends, NaN, infinities, beyond 2^53 or negative,
// are refused by every script rather than decided on.
func TestScriptsRefuseArgumentsOutOfRange(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t)
	const t0 = 1_700_000_000_000_000
	const want = "not integers in range"
	for _, a := range [][]any{
		{"nan", 1_000_000, t0, "", "1:-1", "", 0},
		{10, "inf", t0, "", "1:-1", "", 0},
		{-10, 1_000_000, t0, "", "1:-1", "", 0},
		{10, 1_000_000, "1e300", "", "1:-1", "", 0},
		{10, 1_000_000, t0, "", "1:-1", "", "nan"},
		{10, 1_000_000, t0, "", "99999999999999999999:-1", "", 0},
		{10, 1_000_000, t0, "1700000000000000:1:99999999999999999999:1", "", "", 0},
	} {
		refused(t, c, redislimit.WindowScript, "window-args", want, a...)
	}
	gcra := func(p, cc, now any, reqs string) []any {
		return []any{p, cc, 100_000, 0, now, "", 0, 0, reqs}
	}
	for _, a := range [][]any{
		gcra("nan", 3, t0, "1:-1"),
		gcra(100_000, "inf", t0, "1:-1"),
		gcra(0, 3, t0, "1:-1"),
		gcra(100_000, 3, "-5", "1:-1"),
		gcra(100_000, 3, t0, "99999999999999999999:-1"),
		gcra(100_000, 3, t0, "1:-1:99999999999999"), // a run that would hold Redis for hours
	} {
		refused(t, c, redislimit.Script, "gcra-args", want, a...)
	}
	for _, a := range []string{
		redislimit.LeanArgs(3, 100_000, 0, t0, -1, 100_000, 0, 0, 0)[:8] + packNaN(),
		redislimit.LeanArgs(0, 100_000, 0, t0, -1, 100_000, 0, 0, 0),
		redislimit.LeanArgs(3, 100_000, 0, t0, -2, 100_000, 0, 0, 0),
		redislimit.LeanArgs(3, 100_000, 0, t0, -1, -100_000, 0, 0, 0),
		redislimit.LeanArgs(3, 100_000, 0, t0, -1, 100_000, 5, 0, 0), // ticks beyond C
	} {
		refused(t, c, redislimit.LeanScript, "lean-args", want, a)
	}
	refused(t, c, redislimit.LeanScript, "lean-args", "", "short") // not nine float64s
}

// packNaN is eight bytes of a little-endian float64 NaN, and the rest of
// a lean argument after C.
func packNaN() string {
	b := make([]byte, 64)
	bits := math.Float64bits(math.NaN())
	for i := range 8 {
		b[i] = byte(bits >> (8 * i))
	}
	return string(b)
}

// A Window on a key in a state it cannot have written fails closed: every
// call is an error, none a grant, and the key is left for an operator.
func TestWindowOnABrokenKeyFailsClosed(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t)
	ctx := context.Background()
	w, err := redislimit.NewWindow(c, "broken", algorithms.Rate{Count: 10, Per: time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() { w.Close() })
	_, err = w.TryAcquire(1)
	require.NoError(t, err)
	require.NoError(t, c.HSet(ctx, "broken", "tot", "-1000").Err())
	for range 20 {
		p, err := w.TryAcquire(1)
		assert.Zero(t, p, "no permit")
		assert.ErrorContains(t, err, "does not hold a sluice window")
	}
	assert.Equal(t, "-1000", c.HGet(ctx, "broken", "tot").Val())
	assert.Equal(t, uint64(1), w.Stats().Granted)
}
