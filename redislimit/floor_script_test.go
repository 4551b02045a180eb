package redislimit_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// A floor raises the TAT of a key Redis lost before anything is decided,
// and the key keeps it even when nothing was admitted: at 10/s, burst 2
// (P = 100 000 µs, tau 200 000 µs), a floor 500 ms ahead puts the next
// admission at 400 ms.
func TestScriptFloorRaisesTheTATOfALostKey(t *testing.T) {
	c := redistest.Test(t).Client(t)
	s := script{t: t, c: c, key: "lost", p: 100_000, cc: 1, tauW: 200_000, floor: floorArg(t0+500_000, 0)}
	r := s.run(t0, "", 0, 0, "1:0")
	assert.Equal(t, []int64{-400_000}, r.codes, "refused: it would wait 400 ms")
	assert.Equal(t, redislimit.PackValue(t0+500_000, 0, 1, t0+500_000), r.value, "the floor, written")
	r = s.run(t0, "", 0, 0, "1:-1")
	assert.Equal(t, []int64{t0 + 400_000}, r.codes)
	assert.Equal(t, redislimit.PackValue(t0+600_000, 0, 2, t0+600_000), r.value)

	lean, err := c.Eval(context.Background(), redislimit.LeanScript, []string{"lost-lean"},
		redislimit.LeanArgs(1, 200_000, 0, t0, -1, 100_000, 0, t0+500_000, 0)).Text()
	require.NoError(t, err)
	assert.Equal(t, []int64{t0, 0, t0 + 400_000, t0 + 600_000, 0, 1, t0 + 600_000}, floats(t, lean))
}

// On a key that kept its state the floor is never beyond the TAT, and
// changes nothing: no write (the write count stays), the same decisions.
func TestScriptFloorBehindTheTATChangesNothing(t *testing.T) {
	c := redistest.Test(t).Client(t)
	s := script{t: t, c: c, key: "kept", p: 100_000, cc: 1, tauW: 200_000}
	r := s.run(t0, "", 0, 0, "1:-1:3")
	require.Equal(t, redislimit.PackValue(t0+300_000, 0, 1, t0+300_000), r.value)
	for _, f := range []int64{t0 - 1_000_000, t0 + 200_000, t0 + 300_000} {
		s.floor = floorArg(f, 0)
		r = s.run(t0+10, "", 0, 0, "1:0")
		assert.Equal(t, []int64{-199_990}, r.codes, "floor %d", f-t0)
		assert.Equal(t, redislimit.PackValue(t0+300_000, 0, 1, t0+300_000), r.value, "floor %d: no write", f-t0)
	}
}

// A floor that is not an instant in range fails the call with an error
// reply, in both scripts: it is not the limiter's.
func TestScriptsRefuseAFloorThatIsNotAnInstant(t *testing.T) {
	c := redistest.Test(t).Client(t)
	ctx := context.Background()
	bad := []struct {
		name  string
		w, f  int64
		batch string // the batch script's argument, if not packed from w, f
	}{
		{"ticks beyond C", t0, 3, ""},
		{"negative", -1, 0, ""},
		{"beyond 2^53", 1 << 53, 0, ""},
		{"not 16 bytes", 0, 0, "1796083200000000"},
	}
	for _, b := range bad {
		arg := b.batch
		if arg == "" {
			arg = floorArg(b.w, b.f)
		}
		_, err := c.Eval(ctx, redislimit.Script, []string{"bad"}, 100_000, 3, 100_000, 0, t0, "", 0, 0, "1:-1", arg).Result()
		assert.ErrorContains(t, err, "ERR sluice: the floor", b.name)
		if b.batch == "" {
			_, err = c.Eval(ctx, redislimit.LeanScript, []string{"bad"}, redislimit.LeanArgs(3, 100_000, 0, t0, -1, 100_000, 0, b.w, b.f)).Result()
			assert.ErrorContains(t, err, "ERR sluice: the floor", b.name)
		}
	}
	frac := floorArg(t0, 0)[:8] + "\x00\x00\x00\x00\x00\x00\xe0\x3f" // F = 0.5
	_, err := c.Eval(ctx, redislimit.Script, []string{"bad"}, 100_000, 3, 100_000, 0, t0, "", 0, 0, "1:-1", frac).Result()
	assert.ErrorContains(t, err, "ERR sluice: the floor", "a fraction")
	assert.Zero(t, c.Exists(ctx, "bad").Val(), "nothing written")
}
