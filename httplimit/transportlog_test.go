package httplimit_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/internal/testutil"
)

// A 429 that pauses its host writes one line, its end another, timed at
// the instants; requests to a calm host, and the retry, write none.
func TestLoggerTellsAHostPauseAndItsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs, logger := testutil.NewLogs()
		t0 := time.Now()
		log := &hostLog{t0: t0, sent: map[string][]time.Duration{}}
		tr := newTransportOn(t, testutil.PipeServer(t, busyHost(log, 1)), httplimit.WithLogger(logger))
		var wg sync.WaitGroup
		wg.Go(func() { assert.Equal(t, 200, getVia(t, tr, "http://busy.test/")) })
		synctest.Wait() // the 429 is in, the retry waits
		assert.Equal(t, 200, getVia(t, tr, "http://calm.test/"))
		wg.Wait()
		lines := logs.Lines(t)
		require.Len(t, lines, 2, "%v", lines)
		assert.Equal(t, map[string]any{
			"time": t0.Format(time.RFC3339Nano), "level": "WARN", "msg": "sluice: host paused",
			"http.host": "busy.test", "http.status_code": float64(429),
			"retry_after": float64(time.Second), "capped": false,
		}, lines[0])
		assert.Equal(t, map[string]any{
			"time": t0.Add(time.Second).Format(time.RFC3339Nano), "level": "INFO", "msg": "sluice: host resumed",
			"http.host": "busy.test",
		}, lines[1])
	})
}

// Concurrent 429s of one host make one pause, and one line each way; a
// pause the cap shortened says so. Such a response is handed back, not
// retried: the end is told by the next request to the host.
func TestLoggerTellsOnePausePerSpell(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs, logger := testutil.NewLogs()
		log := &hostLog{t0: time.Now(), sent: map[string][]time.Duration{}}
		tr := newTransportOn(t, testutil.PipeServer(t, allIn(10, busyHost(log, 10))),
			httplimit.WithLogger(logger), httplimit.WithMaxPause(500*time.Millisecond))
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() { _ = getVia(t, tr, "http://busy.test/") })
		}
		wg.Wait()
		assert.Equal(t, []string{"sluice: host paused"}, logs.Messages(t))
		time.Sleep(time.Second)
		assert.Equal(t, http.StatusOK, getVia(t, tr, "http://busy.test/"))
		assert.Equal(t, []string{"sluice: host paused", "sluice: host resumed"}, logs.Messages(t))
		lines := logs.Lines(t)
		assert.Equal(t, true, lines[0]["capped"])
		assert.Equal(t, float64(500*time.Millisecond), lines[0]["retry_after"])
	})
}

// A thousand requests answered 200 write nothing.
func TestLoggerWritesNoLineForRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs, logger := testutil.NewLogs()
		log := &hostLog{t0: time.Now(), sent: map[string][]time.Duration{}}
		tr := newTransportOn(t, testutil.PipeServer(t, busyHost(log, 0)), httplimit.WithLogger(logger))
		for i := range 1000 {
			assert.Equal(t, http.StatusOK, getVia(t, tr, fmt.Sprintf("http://h%d.test/", i%3)))
		}
		assert.Empty(t, logs.Messages(t))
	})
}
