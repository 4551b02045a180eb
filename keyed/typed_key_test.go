package keyed_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// takeOnly takes key's one unit an hour and reports whether a second
// TryAcquire is refused: the key has a limit of its own, not another's.
func takeOnly[K comparable](t *testing.T, l *keyed.Limiter[K], key K) {
	t.Helper()
	_, err := l.TryAcquire(key, 1)
	require.NoError(t, err, "%T(%v) has its own limit", key, key)
	_, err = l.TryAcquire(key, 1)
	require.ErrorIs(t, err, permits.ErrRateLimited, "%T(%v) took its unit", key, key)
}

// TestKeysOfOtherTypesHaveTheirOwnLimits: maphash hashes an interface by
// its value alone, so int64(5) and uint64(5) in a Limiter[any] hashed
// alike and, the table keeping only hashes, always shared one limit. The
// dynamic types are hashed too, at the top and inside structs and arrays.
func TestKeysOfOtherTypesHaveTheirOwnLimits(t *testing.T) {
	one := gcraPer[any](algorithms.PerHour(1), 1)
	l := newLimiter(t, one)
	for _, k := range []any{int64(5), uint64(5), int(5), int32(5), "5", nil} {
		takeOnly(t, l, k)
	}
	assert.Equal(t, 6, l.Stats().Keys)

	type route struct {
		Path string
		User any
	}
	lr := newLimiter(t, gcraPer[route](algorithms.PerHour(1), 1))
	takeOnly(t, lr, route{"/a", int64(7)})
	takeOnly(t, lr, route{"/a", uint64(7)})
	takeOnly(t, lr, route{"/a", nil})

	la := newLimiter(t, gcraPer[[2]any](algorithms.PerHour(1), 1))
	takeOnly(t, la, [2]any{int8(1), int16(1)})
	takeOnly(t, la, [2]any{int16(1), int8(1)})
	assert.Equal(t, 2, la.Stats().Keys)
}

// TestEqualKeysOfOneTypeShareALimit: the type mixed in is the same for
// equal keys, so they still find one limit, also through an interface
// holding a struct.
func TestEqualKeysOfOneTypeShareALimit(t *testing.T) {
	type user struct{ ID int }
	l := newLimiter(t, gcraPer[any](algorithms.PerHour(1), 1))
	_, err := l.TryAcquire(user{1}, 1)
	require.NoError(t, err)
	_, err = l.TryAcquire(any(user{1}), 1)
	assert.ErrorIs(t, err, permits.ErrRateLimited)
	assert.Equal(t, 1, l.Stats().Keys)
}
