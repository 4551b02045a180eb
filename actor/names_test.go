package actor_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
)

// An owner runs under pprof labels that name it, so that a goroutine dump
// of a limiter or pool nobody closed says which one it is.
func TestOwnersRunUnderTheirNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.New(gcra(t, algorithms.PerSecond(10), 1), actor.WithName("search-api"))
		defer l.Close()
		p := newPool(t, 4, actor.WithPoolName("db-conns"))
		defer p.Close()
		synctest.Wait() // both owners have started and parked
		labels := testutil.GoroutineLabels()
		assert.Contains(t, labels, `{"sluice.algorithm":"GCRA", "sluice.limiter":"search-api"}`)
		assert.Contains(t, labels, `{"sluice.pool":"db-conns"}`)
	})
}
