package algorithms_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
)

// TestMovingACellKeepsItsStateAndRetiresTheOld: the moved cell decides as
// the old one would have, every admission made on it before the move
// included, and the old one is retired as Retire leaves it (Retired, and
// the fast path finds it out of use), so a caller still holding it looks
// again.
func TestMovingACellKeepsItsStateAndRetiresTheOld(t *testing.T) {
	cells, err := algorithms.NewCells(algorithms.PerHour(1), 5)
	require.NoError(t, err)
	now := time.Now()
	cells.Advance(now)
	var src, dst, twin algorithms.Cell
	for range 3 {
		ok, _, open := cells.TryAdmitAt(&src, now, 1)
		require.True(t, ok && open)
		ok, _, open = cells.TryAdmitAt(&twin, now, 1)
		require.True(t, ok && open)
	}
	require.True(t, cells.Move(&dst, &src))
	assert.True(t, cells.Retired(&src), "Cells sees the old cell retired")
	_, _, open := cells.TryAdmitAt(&src, now, 1)
	assert.False(t, open, "the fast path decides nothing on it")
	assert.False(t, cells.Retire(&src, now.Add(time.Hour)), "nor the owner")
	assert.Equal(t, cells.AllowAt(&twin, now, 0), cells.AllowAt(&dst, now, 0), "the moved cell is the old one's state")
	for range 2 {
		ok, _, open := cells.TryAdmitAt(&dst, now, 1)
		assert.True(t, ok && open)
	}
	ok, _, open := cells.TryAdmitAt(&dst, now, 1)
	assert.True(t, open)
	assert.False(t, ok, "the three admissions before the move are in it")

	var again algorithms.Cell
	assert.False(t, cells.Move(&again, &src))
	assert.Equal(t, cells.AllowAt(&algorithms.Cell{}, now, 0), cells.AllowAt(&again, now, 0), "a retired cell moves nothing")
}
