// Package metricsrctest is the timeline the tests of sluiceotel and
// sluiceprom send through an httplimit.Transport, so that both adapters
// are held to one scripted set of figures.
package metricsrctest

import (
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/permits"
)

// NewTransport returns an unlimited Transport, with a pause cap of a
// minute, to an in-process API that answers a.test with a 429 asking for
// 1 s and then 200s, b.test with a 404, and c.test with a 503 asking for
// two minutes.
func NewTransport() (*httplimit.Transport, error) {
	return httplimit.NewTransport(permits.Unlimited, httplimit.WithBase(&api{}), httplimit.WithMaxPause(time.Minute))
}

// Send sends one GET to each of a.test, b.test and c.test through tr, in
// order: a.test is retried after its pause; c.test asks for longer than
// the cap, so its 503 goes back as it came and c.test stays paused for
// the minute. Run it in a synctest bubble: it waits a second.
func Send(tr *httplimit.Transport) error {
	for _, host := range []string{"a.test", "b.test", "c.test"} {
		req, err := http.NewRequest(http.MethodGet, "http://"+host+"/", nil)
		if err != nil {
			return err
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	return nil
}

// api answers from the script of NewTransport.
type api struct {
	mu sync.Mutex
	a  int // requests to a.test
}

func (s *api) RoundTrip(r *http.Request) (*http.Response, error) {
	resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: r}
	switch r.URL.Host {
	case "a.test":
		s.mu.Lock()
		s.a++
		first := s.a == 1
		s.mu.Unlock()
		if first {
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
