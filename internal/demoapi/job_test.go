package demoapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/demoapi"
)

func TestJobsAreTheSameForTheSameSeed(t *testing.T) {
	a, b := demoapi.Jobs(200, 100, 1900, 7), demoapi.Jobs(200, 100, 1900, 7)
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, demoapi.Jobs(200, 100, 1900, 8))
	for i, j := range a {
		assert.Equal(t, i, j.ID)
		assert.True(t, j.Estimate() >= 100 && j.Estimate() <= 1900, "%d", j.Estimate())
		assert.Equal(t, j.Estimate()/3, j.Prompt)
	}
}

// handler serves requests by calling h in-process.
type handler struct{ h http.Handler }

func (p handler) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// Run sends the job's request, the Recorder notes its attempts, and a
// refusal leaves the job not done.
func TestRunAndRecorder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := config()
		c.RPS = 1
		api := demoapi.New(c)
		jobs := demoapi.Jobs(2, 100, 1900, 1)
		client := &http.Client{Transport: &demoapi.Recorder{Base: handler{api}, Jobs: demoapi.ByID(jobs)}}
		t0 := time.Now()
		require.NoError(t, jobs[0].Run(context.Background(), client, "http://api.test"))
		assert.True(t, jobs[0].Done)
		assert.Equal(t, 1, jobs[0].Attempts)
		assert.Equal(t, t0, jobs[0].Start)
		assert.Equal(t, t0, jobs[0].FirstSent)
		s := api.Snapshot()
		assert.Equal(t, s.TokensUsed, jobs[0].Used)
		assert.Equal(t, jobs[0].Estimate(), s.TokensEstimated)

		err := jobs[1].Run(context.Background(), client, "http://api.test")
		assert.ErrorContains(t, err, "429", "one request a second: the second is refused, and nothing retries it")
		assert.False(t, jobs[1].Done)
		assert.Equal(t, 1, jobs[1].Attempts)
	})
}

func TestUsage(t *testing.T) {
	ok := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"X-Usage-Tokens": {"42"}}}
	n, valid := demoapi.Usage(ok)
	assert.Equal(t, int64(42), n)
	assert.True(t, valid)
	n, valid = demoapi.Usage(&http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{}})
	assert.Zero(t, n)
	assert.True(t, valid, "a refusal used nothing")
	for _, bad := range []string{"", "-1", "x"} {
		_, valid = demoapi.Usage(&http.Response{StatusCode: http.StatusOK, Header: http.Header{"X-Usage-Tokens": {bad}}})
		assert.False(t, valid, "%q", bad)
	}
}

func TestOvertakes(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	inOrder := []*demoapi.Job{{Start: ms(0), FirstSent: ms(10)}, {Start: ms(5), FirstSent: ms(20)}, {Start: ms(6)}}
	assert.Zero(t, demoapi.Overtakes(inOrder, 5*time.Millisecond))
	passed := []*demoapi.Job{{Start: ms(0), FirstSent: ms(30)}, {Start: ms(10), FirstSent: ms(20)}}
	assert.Equal(t, 1, demoapi.Overtakes(passed, 5*time.Millisecond))
	assert.Zero(t, demoapi.Overtakes(passed, 11*time.Millisecond), "within the slack")
}

func TestBinding(t *testing.T) {
	assert.Equal(t, "the token quota: 96% of it used, 50% of the request quota", demoapi.Binding(0.96, 0.5))
	assert.Equal(t, "the request quota: 90% of it used, 40% of the token quota", demoapi.Binding(0.4, 0.9))
}

func TestTally(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	jobs := []*demoapi.Job{
		{Start: t0, Sent: t0.Add(3 * time.Second), Done: true},
		{Start: t0, Sent: t0.Add(time.Second), Done: true},
		{Start: t0, Sent: t0.Add(9 * time.Second)}, // not done: its wait does not count
	}
	done, failed, p50, p99 := demoapi.Tally(jobs)
	assert.Equal(t, 2, done)
	assert.Equal(t, 1, failed)
	assert.Equal(t, time.Second, p50)
	assert.Equal(t, time.Second, p99, "the 99th of two is the lower: index (2-1)·99/100")
}
