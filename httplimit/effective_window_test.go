package httplimit_test

import (
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/keyed"
)

// Issue 27: t is the time until the window gives a unit back, not an
// estimate from its average rate. 4 a minute, requests at 0, 10, 20 and
// 30 s: a sliding window gives the first back when it leaves, at 60 s; a
// fixed one gives all back when it ends, at 60 s too. A refusal's t is
// its Retry-After.
func TestTIsWhenAWindowGivesAUnitBack(t *testing.T) {
	windows := map[string]func() (algorithms.Algorithm, error){
		"sliding": func() (algorithms.Algorithm, error) { return algorithms.NewSlidingWindow(algorithms.PerMinute(4)) },
		"fixed":   func() (algorithms.Algorithm, error) { return algorithms.NewFixedWindow(algorithms.PerMinute(4)) },
	}
	for name, window := range windows {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := windowed(t, window)
				for i := range 4 {
					if i > 0 {
						time.Sleep(10 * time.Second)
					}
					rec := serveFrom(h, "192.0.2.1:1234")
					require.Equal(t, 200, rec.Code)
					assert.Equal(t, fmt.Sprintf(`"default";r=%d;t=%d`, 3-i, 60-10*i), rec.Header().Get("RateLimit"), "at %d s", 10*i)
				}
				time.Sleep(5 * time.Second)
				rec := serveFrom(h, "192.0.2.1:1234")
				require.Equal(t, 429, rec.Code)
				assert.Equal(t, `"default";r=0;t=25`, rec.Header().Get("RateLimit"))
				assert.Equal(t, "25", rec.Header().Get("Retry-After"))
			})
		})
	}
}

// After the first unit comes back, a sliding window's next is the next
// admission to leave: at 60 s the one of 0 s has left, and the one of
// 10 s leaves at 70 s.
func TestTOfASlidingWindowFollowsItsOldestAdmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := windowed(t, func() (algorithms.Algorithm, error) { return algorithms.NewSlidingWindow(algorithms.PerMinute(4)) })
		for range 2 {
			serveFrom(h, "192.0.2.1:1234")
			time.Sleep(10 * time.Second)
		}
		time.Sleep(40 * time.Second) // 60 s: the first has left
		rec := serveFrom(h, "192.0.2.1:1234")
		require.Equal(t, 200, rec.Code)
		assert.Equal(t, `"default";r=2;t=10`, rec.Header().Get("RateLimit"))
	})
}

// windowed returns the middleware over a keyed limiter whose keys each
// get window(), closed when t ends.
func windowed(t *testing.T, window func() (algorithms.Algorithm, error)) http.Handler {
	l, err := keyed.New(func(string) (algorithms.Algorithm, error) { return window() })
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return httplimit.Middleware(l, byIP(t))(ok)
}
