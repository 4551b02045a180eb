package httplimit_test

import (
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/permits"
)

// okBase answers every request at once with a 200 and no body: what a
// RoundTrip costs beside its base.
type okBase struct{}

func (okBase) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
}

// BenchmarkRoundTrip is one RoundTrip through an unlimited Transport to an
// in-process base, without an observer and with a WaitHistogram: what the
// counters and the observer add to the Transport's own path, with no
// network to hide it. docs/observability.md has the figures.
func BenchmarkRoundTrip(b *testing.B) {
	var waits permits.WaitHistogram
	for _, c := range []struct {
		name string
		opts []httplimit.TransportOption
	}{
		{"observer=none", nil},
		{"observer=histogram", []httplimit.TransportOption{httplimit.WithObserver(&waits)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			tr, err := httplimit.NewTransport(permits.Unlimited, append(c.opts, httplimit.WithBase(okBase{}))...)
			if err != nil {
				b.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := tr.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				_ = resp.Body.Close()
			}
		})
	}
}
