package pooltable_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sluicehq/sluice/internal/pooltable"
)

func TestLatencyIsAnAverageWeightingEachSampleAnEighth(t *testing.T) {
	var e pooltable.Entry
	assert.Zero(t, e.Latency(), "no sample yet")
	e.Observe(80 * time.Millisecond)
	assert.Equal(t, 80*time.Millisecond, e.Latency(), "the first sample sets it")
	e.Observe(160 * time.Millisecond)
	assert.Equal(t, 90*time.Millisecond, e.Latency(), "80 + (160-80)/8")
}
