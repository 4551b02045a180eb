package sluice_test

import (
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/keyed"
)

// TestTheReadmePerIPLimitAdmits100InAnyMinute plays the README's per-IP
// limit, as it is written there, on a real http.Server for three minutes of
// virtual time, one request every 100 ms from one address: 100 are
// admitted in the first minute and no more than 100 in any minute (a GCRA
// of 100/min with a burst of 100 admitted 199 in the first).
func TestTheReadmePerIPLimitAdmits100InAnyMinute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		perIP, err := keyed.New(func(string) (algorithms.Algorithm, error) {
			return algorithms.NewSlidingWindow(algorithms.PerMinute(100))
		})
		require.NoError(t, err)
		defer perIP.Close()
		byIP, err := httplimit.KeyByIP()
		require.NoError(t, err)
		c := &http.Client{Transport: testutil.PipeServer(t, httplimit.Middleware(perIP, byIP)(http.NotFoundHandler()))}

		t0 := time.Now()
		var admitted []time.Duration
		for range 1800 {
			resp, err := c.Get("http://api.example/")
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			require.Contains(t, []int{http.StatusNotFound, http.StatusTooManyRequests}, resp.StatusCode)
			if resp.StatusCode == http.StatusNotFound { // passed to the handler
				admitted = append(admitted, time.Since(t0))
			}
			time.Sleep(100 * time.Millisecond)
		}
		first := 0
		for _, at := range admitted {
			if at < time.Minute {
				first++
			}
		}
		assert.Equal(t, 100, first, "the first minute")
		for i := range admitted {
			j := i
			for j < len(admitted) && admitted[j]-admitted[i] < time.Minute {
				j++
			}
			require.LessOrEqual(t, j-i, 100, "the minute from %v", admitted[i])
		}
	})
}
