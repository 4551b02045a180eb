package pause_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/pause"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestAnEarlierEndNeverShortensALaterPause(t *testing.T) {
	var tab pause.Table
	t0 := time.Unix(1000, 0)
	tab.Pause("a", t0.Add(2*time.Second))
	tab.Pause("a", t0.Add(time.Second))
	until, ok := tab.Until("a", t0)
	assert.True(t, ok)
	assert.Equal(t, t0.Add(2*time.Second), until)
	_, ok = tab.Until("b", t0)
	assert.False(t, ok, "another destination is not paused")
}

func TestAPauseThatPassedIsForgotten(t *testing.T) {
	var tab pause.Table
	t0 := time.Unix(1000, 0)
	tab.Pause("a", t0.Add(time.Second))
	_, ok := tab.Until("a", t0.Add(time.Second))
	assert.False(t, ok)
}

func TestTheJitterIsAboveTheWaitAndBounded(t *testing.T) {
	for _, d := range []time.Duration{0, time.Second, time.Hour} {
		spread := min(max(d/4, 100*time.Millisecond), 5*time.Second)
		for range 100 {
			j := pause.JitterAbove(d)
			assert.GreaterOrEqual(t, j, time.Duration(0))
			assert.LessOrEqual(t, j, spread)
		}
	}
}

func TestOnlyTheFirstPauseOfASpellStartsIt(t *testing.T) {
	var tab pause.Table
	t0 := time.Unix(1000, 0)
	assert.True(t, tab.PauseAt("a", t0, t0.Add(time.Second)), "not paused before")
	assert.False(t, tab.PauseAt("a", t0, t0.Add(2*time.Second)), "extends the pause under way")
	assert.False(t, tab.PauseAt("a", t0, t0.Add(time.Second)), "shortens nothing")
	assert.False(t, tab.PauseAt("b", t0, t0), "an end already here pauses nothing")
	assert.True(t, tab.PauseAt("a", t0.Add(3*time.Second), t0.Add(4*time.Second)), "the last one had passed")
}

func TestAPauseEndIsToldOnce(t *testing.T) {
	var tab pause.Table
	t0 := time.Unix(1000, 0)
	tab.Pause("a", t0.Add(time.Second))
	_, paused, ended := tab.Check("a", t0)
	assert.True(t, paused)
	assert.True(t, ended.IsZero(), "not over yet")
	_, paused, ended = tab.Check("a", t0.Add(2*time.Second))
	assert.False(t, paused)
	assert.Equal(t, t0.Add(time.Second), ended)
	_, _, ended = tab.Check("a", t0.Add(3*time.Second))
	assert.True(t, ended.IsZero(), "told once")
}
