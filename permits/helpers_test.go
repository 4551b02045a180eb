package permits_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/permits"
)

func TestDoReleasesAfterFnReturnsOrPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slots := newPool(t, 1)
		errCall := errors.New("call failed")
		err := permits.Do(context.Background(), slots, 1, func(ctx context.Context) error {
			assert.Equal(t, int64(1), slots.Stats().InFlight, "held while fn runs")
			return errCall
		})
		assert.ErrorIs(t, err, errCall)
		assert.Equal(t, int64(0), slots.Stats().InFlight)

		assert.PanicsWithValue(t, "boom", func() {
			_ = permits.Do(context.Background(), slots, 1, func(context.Context) error { panic("boom") })
		})
		assert.Equal(t, int64(0), slots.Stats().InFlight, "released on panic")
	})
}

func TestDoDoesNotRunFnWithoutAPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slots := newPool(t, 1)
		ran := false
		err := permits.Do(context.Background(), slots, 2, func(context.Context) error { ran = true; return nil })
		assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity)
		assert.False(t, ran)
	})
}

func TestWrap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slots := newPool(t, 1)
		double := permits.Wrap(slots, 1, func(ctx context.Context) (int, error) {
			assert.Equal(t, int64(1), slots.Stats().InFlight)
			return 42, nil
		})
		v, err := double(context.Background())
		require.NoError(t, err)
		assert.Equal(t, 42, v)
		assert.Equal(t, int64(0), slots.Stats().InFlight)

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		v, err = double(ctx)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Zero(t, v)

		// Unlimited stands in for a real limiter in tests of such code.
		s, err := permits.Wrap(permits.Unlimited, 5, func(context.Context) (string, error) { return "ok", nil })(context.Background())
		assert.NoError(t, err)
		assert.Equal(t, "ok", s)
	})
}

func TestFixedCost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slots := newPool(t, 3)
		one := permits.FixedCost(slots, 1)
		p, err := one.Acquire(context.Background(), 1000)
		require.NoError(t, err)
		assert.Equal(t, int64(1), p.Cost())
		q, err := one.TryAcquire(7)
		require.NoError(t, err)
		assert.Equal(t, int64(2), slots.Stats().InFlight)
		p.Release()
		q.Release()
		_, err = one.Acquire(context.Background(), 0)
		assert.ErrorIs(t, err, permits.ErrInvalidCost, "the caller's cost is still checked")
		_, err = one.TryAcquire(-1)
		assert.ErrorIs(t, err, permits.ErrInvalidCost)
		_, err = permits.FixedCost(slots, 0).Acquire(context.Background(), 1)
		assert.ErrorIs(t, err, permits.ErrInvalidCost, "and so is n, by lim")
	})
}
