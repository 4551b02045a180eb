package keyed_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/keyed"
)

// A key that is not equal to itself (a float NaN, or a struct or interface
// holding one) hashes differently every time, so each request would make a
// new, full key and never be limited: 25 of 25 granted against a burst of
// 3 an hour. It is refused with ErrInvalidKey, by every call that takes a
// key, and makes no key.
func TestAKeyNotEqualToItselfIsRefused(t *testing.T) {
	l := newLimiter(t, gcraPer[float64](algorithms.PerHour(1), 3))
	nan := math.NaN()
	for range 25 {
		_, err := l.TryAcquire(nan, 1)
		require.ErrorIs(t, err, keyed.ErrInvalidKey)
	}
	_, err := l.Acquire(context.Background(), nan, 1)
	assert.ErrorIs(t, err, keyed.ErrInvalidKey)
	_, _, err = l.TryAcquireQuota(nan, 1)
	assert.ErrorIs(t, err, keyed.ErrInvalidKey)
	assert.ErrorIs(t, l.SetRate(nan, algorithms.PerHour(2)), keyed.ErrInvalidKey)
	assert.Zero(t, l.Stats().Keys)

	type pair struct {
		route string
		x     float64
	}
	lp := newLimiter(t, gcraPer[pair](algorithms.PerHour(1), 3))
	_, err = lp.TryAcquire(pair{"/a", nan}, 1)
	assert.ErrorIs(t, err, keyed.ErrInvalidKey, "a struct holding a NaN")

	la := newLimiter(t, gcraPer[any](algorithms.PerHour(1), 3))
	_, err = la.TryAcquire(any(nan), 1)
	assert.ErrorIs(t, err, keyed.ErrInvalidKey, "an interface holding a NaN")
	for range 3 {
		_, err = l.TryAcquire(1.5, 1)
		require.NoError(t, err, "other float keys are limited as ever")
	}
	_, err = l.TryAcquire(1.5, 1)
	assert.Error(t, err)
}
