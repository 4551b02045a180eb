package sluiceotel_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/sluiceotel"
)

// scriptedAPI answers a.test with a 429 asking for 1 s and then a 200,
// b.test with a 404, and c.test with a 503 asking for two minutes.
type scriptedAPI struct{ a int }

func (s *scriptedAPI) RoundTrip(r *http.Request) (*http.Response, error) {
	resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: r}
	switch r.URL.Host {
	case "a.test":
		if s.a++; s.a == 1 {
			resp.StatusCode = http.StatusTooManyRequests
			resp.Header.Set("Retry-After", "1")
		}
	case "b.test":
		resp.StatusCode = http.StatusNotFound
	case "c.test":
		resp.StatusCode = http.StatusServiceUnavailable
		resp.Header.Set("Retry-After", "120")
	}
	return resp, nil
}

// sendScript sends one GET to each host of scriptedAPI through tr, in
// order: a.test is retried after its pause; c.test asks for longer than
// the cap of a minute, so its 503 goes back as it came and c.test stays
// paused for the minute.
func sendScript(t *testing.T, tr *httplimit.Transport) {
	for _, host := range []string{"a.test", "b.test", "c.test"} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+host+"/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
}

func newScriptedTransport(t *testing.T) *httplimit.Transport {
	tr, err := httplimit.NewTransport(permits.Unlimited, httplimit.WithBase(&scriptedAPI{}),
		httplimit.WithMaxPause(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// A Transport reports its counters, its pauses by the status that asked,
// its responses by class, and the hosts paused now; no host is an
// attribute.
func TestATransportReportsItsPausesByReasonAndResponsesByClass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mp, reader := newReader(t)
		tr := newScriptedTransport(t)
		reg, err := sluiceotel.Register(mp.Meter("test"), sluiceotel.Transport("api", tr.Stats))
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Unregister()
		sendScript(t, tr)

		const at = "sluice.transport.name=api"
		lines := []string{
			"counter sluice.transport.requests{" + at + "} 3",
			"counter sluice.transport.attempts{" + at + "} 4",
			"counter sluice.transport.paced{" + at + "} 0",
			"counter sluice.transport.retries{" + at + "} 1",
			"counter sluice.transport.refused_retries{" + at + "} 0",
			"counter sluice.transport.breaker_rejected{" + at + "} 0",
			"counter sluice.transport.pauses{" + at + ",sluice.transport.reason=429} 1",
			"counter sluice.transport.pauses{" + at + ",sluice.transport.reason=503} 1",
			"counter sluice.transport.pauses{" + at + ",sluice.transport.reason=other} 0",
			"updown sluice.transport.paused_hosts{" + at + "} 1",
		}
		for _, class := range []string{"1xx 0", "2xx 1", "3xx 0", "4xx 2", "5xx 1", "other 0"} {
			lines = append(lines, "counter sluice.transport.responses{sluice.transport.class="+
				strings.Replace(class, " ", ","+at+"} ", 1))
		}
		assertLines(t, collect(t, reader), lines...)

		time.Sleep(time.Minute) // c.test's pause has passed
		got := collect(t, reader)
		assertContains(t, got, "updown sluice.transport.paused_hosts{"+at+"} 0")
	})
}

func assertContains(t *testing.T, got []string, want string) {
	t.Helper()
	for _, line := range got {
		if line == want {
			return
		}
	}
	t.Errorf("collected:\n\t%s\nwant a line %q", strings.Join(got, "\n\t"), want)
}

// A Transport source needs a name and a stats function.
func TestATransportSourceNeedsANameAndStats(t *testing.T) {
	mp, _ := newReader(t)
	tr := newScriptedTransport(t)
	for name, src := range map[string]sluiceotel.Source{
		"no name":  sluiceotel.Transport("", tr.Stats),
		"no stats": sluiceotel.Transport("api", nil),
	} {
		if _, err := sluiceotel.Register(mp.Meter("test"), src); !errors.Is(err, permits.ErrInvalidConfig) {
			t.Errorf("%s: %v, want an error matching permits.ErrInvalidConfig", name, err)
		}
	}
}
