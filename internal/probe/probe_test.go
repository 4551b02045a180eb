package probe_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/probe"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestAProbeIsMarkedOnlyByContext(t *testing.T) {
	assert.False(t, probe.Is(context.Background()))
	ctx := probe.Context(context.Background())
	assert.True(t, probe.Is(ctx))
	child, cancel := context.WithCancel(ctx)
	defer cancel()
	assert.True(t, probe.Is(child), "a context made from a probe is one")
}

type registered struct{}
type unregistered struct{}

func TestOnlyRegisteredTypesHonourAProbe(t *testing.T) {
	probe.Register((*registered)(nil))
	assert.True(t, probe.Honours(&registered{}))
	assert.False(t, probe.Honours(&unregistered{}))
	assert.False(t, probe.Honours(registered{}), "the value type is another type")
	assert.False(t, probe.Honours(nil))
}
