package metricsrctest_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/internal/metricsrc/metricsrctest"
)

// The timeline gives the figures both adapters' tests expect: three
// requests, four attempts (a.test's retry), a pause started by a 429 and
// one by a 503, a response of 2xx, two of 4xx and one of 5xx, and c.test
// paused at the end.
func TestTheScriptGivesTheFiguresTheAdaptersExpect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, err := metricsrctest.NewTransport()
		require.NoError(t, err)
		require.NoError(t, metricsrctest.Send(tr))
		assert.Equal(t, httplimit.TransportStats{
			Requests: 3, Attempts: 4, Retries: 1, Throttled: 1, Unavailable: 1, Pauses: 2, Capped: 1,
			PausesStarted: httplimit.PauseCounts{TooManyRequests: 1, ServiceUnavailable: 1},
			Responses:     [6]int64{2: 1, 4: 2, 5: 1},
			PausedHosts:   1,
		}, tr.Stats())
	})
}
