package redislimit_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// TestKeySlotIsWhatRedisSays checks the slot function against CLUSTER
// KEYSLOT on a real server, hash tags and their edge cases included.
func TestKeySlotIsWhatRedisSays(t *testing.T) {
	c := redistest.TestCluster(t, 1).Servers[0].Client(t)
	keys := []string{
		"", "a", "foo", "123456789", "quota:{user1}", "{user1}:x", "{}", "{}x", "x{}",
		"{}{a}", "a{b}{c}", "{a", "a}", "}{a}", "{{a}}", "prefix{{a}", "é{ü}", "\x00\xff",
	}
	for i := range 200 {
		keys = append(keys, fmt.Sprintf("quota:{user%d}", i), fmt.Sprintf("k%d", i*7919))
	}
	for _, k := range keys {
		want, err := c.ClusterKeySlot(context.Background(), k).Result()
		require.NoError(t, err)
		assert.Equal(t, want, int64(redislimit.KeySlot(k)), "key %q", k)
	}
}
