package keyed

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
)

// TestHashCollisionsShareALimit documents what the table's keeping only a
// key's 64-bit hash means (see table): two keys of one hash are one key to
// the limiter, one state, one slot, one count in Stats, and the second
// one's constructor is never called. A collision is as likely as two of n
// keys sharing a 64-bit hash, about 3·10⁻⁸ for a million live keys; it
// cannot be made with maphash, so the test gives the second key the
// first's hash.
func TestHashCollisionsShareALimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		made := map[string]int{}
		l, err := New(func(k string) (algorithms.Algorithm, error) {
			made[k]++
			return algorithms.NewGCRA(algorithms.PerHour(1), 3)
		}, WithShards(4))
		require.NoError(t, err)
		defer l.Close()
		s, h, _ := l.shard("alice")
		try := func(key string, h uint64) bool {
			a, err := s.attempt(key, h, 1, false, false)
			require.NoError(t, err)
			require.Equal(t, vDecided, a.verdict)
			return a.d.Allowed
		}
		assert.True(t, try("alice", h))
		assert.True(t, try("alice", h))
		assert.True(t, try("mallory", h), "alice's third unit")
		assert.False(t, try("mallory", h), "alice's limit")
		assert.False(t, try("alice", h))
		assert.Equal(t, 1, l.Stats().Keys)
		assert.Equal(t, map[string]int{"alice": 1}, made)
		_, err = l.TryAcquire("mallory", 1)
		assert.NoError(t, err, "with its own hash, a key of its own")
		assert.Equal(t, 2, l.Stats().Keys)
	})
}
