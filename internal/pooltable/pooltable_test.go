package pooltable_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/internal/pooltable"
	"github.com/sluicehq/sluice/permits"
)

// table returns a table of at most max keys that counts the controllers
// it makes (the one New validates with included).
func table(t *testing.T, max int, opts ...actor.AdaptiveOption) (*pooltable.Table, *atomic.Int64) {
	t.Helper()
	var made atomic.Int64
	tb, err := pooltable.New(pooltable.Config{Pkg: "test", Name: "test", Max: max, Options: opts,
		NewController: func() actor.Controller { made.Add(1); return &actor.AIMD{} }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tb.Close() })
	return tb, &made
}

func TestEachKeyGetsOnePoolOfItsOwn(t *testing.T) {
	tb, made := table(t, 4)
	a, err := tb.Get("a")
	require.NoError(t, err)
	again, err := tb.Get("a")
	require.NoError(t, err)
	b, err := tb.Get("b")
	require.NoError(t, err)
	assert.Same(t, a, again, "a key's second use finds its first pool")
	assert.NotSame(t, a.Pool, b.Pool)
	assert.Equal(t, "a", a.Key)
	assert.Equal(t, 2, tb.Len())
	assert.Equal(t, int64(3), made.Load(), "one controller per key, plus New's probe")
	assert.Same(t, a, tb.Lookup("a"))
	assert.Nil(t, tb.Lookup("never"), "Lookup makes no pool")
	assert.Nil(t, tb.Lookup(pooltable.Overflow), "no overflow before the table is full")
}

func TestKeysPastTheBoundShareTheOverflowPool(t *testing.T) {
	tb, made := table(t, 3)
	own := map[string]*pooltable.Entry{}
	for i := range 3 {
		k := fmt.Sprint("k", i)
		e, err := tb.Get(k)
		require.NoError(t, err)
		own[k] = e
	}
	first, err := tb.Get("k3")
	require.NoError(t, err)
	assert.Equal(t, pooltable.Overflow, first.Key)
	for i := 4; i < 100; i++ {
		e, err := tb.Get(fmt.Sprint("k", i))
		require.NoError(t, err)
		assert.Same(t, first, e, "every key past the bound shares one pool")
	}
	for k, e := range own {
		got, err := tb.Get(k)
		require.NoError(t, err)
		assert.Same(t, e, got, "a key with a pool keeps it once the table is full")
	}
	assert.Equal(t, 3, tb.Len())
	assert.Same(t, first, tb.Lookup(pooltable.Overflow))
	assert.Nil(t, tb.Lookup("k50"), "a key in the overflow has no pool of its own")
	assert.Equal(t, int64(3+1+1), made.Load(), "the bound, the overflow, New's probe")
}

func TestConcurrentGetsAgreeAndStayBounded(t *testing.T) {
	const max, keys, callers = 16, 64, 8
	tb, made := table(t, max)
	got := make([][]*pooltable.Entry, callers)
	var wg sync.WaitGroup
	for c := range callers {
		got[c] = make([]*pooltable.Entry, keys)
		wg.Go(func() {
			for k := range keys {
				e, err := tb.Get(fmt.Sprint((k + c) % keys))
				if assert.NoError(t, err) {
					got[c][(k+c)%keys] = e
				}
			}
		})
	}
	wg.Wait()
	pools := map[*actor.AdaptivePool]bool{}
	for k := range keys {
		for c := range callers {
			assert.Same(t, got[0][k], got[c][k], "key %d: every caller gets the same pool", k)
		}
		pools[got[0][k].Pool] = true
	}
	assert.Len(t, pools, max+1, "the bound's pools and the overflow")
	assert.Equal(t, max, tb.Len())
	assert.Equal(t, int64(max+1+1), made.Load(), "no pool made and thrown away in a race")
}

func TestNewRefusesABadConfiguration(t *testing.T) {
	ctl := func() actor.Controller { return &actor.AIMD{} }
	for name, cfg := range map[string]pooltable.Config{
		"nil controller": {Max: 1},
		"no keys":        {NewController: ctl, Max: 0},
		"bad limits":     {NewController: ctl, Max: 1, Options: []actor.AdaptiveOption{actor.WithLimits(10, 5, 1)}},
	} {
		t.Run(name, func(t *testing.T) {
			tb, err := pooltable.New(cfg)
			assert.ErrorIs(t, err, permits.ErrInvalidConfig)
			assert.Nil(t, tb)
		})
	}
}
