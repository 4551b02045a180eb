package httplimit_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/permits"
)

// okBase answers every request at once with a 200 and no body: what a
// RoundTrip costs beside its base, with no network to hide it.
type okBase struct{}

func (okBase) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
}

// BenchmarkRoundTrip is one RoundTrip through an unlimited Transport,
// without an observer and with a WaitHistogram, to an in-process base
// (the Transport's own path alone) and to a real server on loopback (the
// least a user's request costs). docs/observability.md has the figures.
func BenchmarkRoundTrip(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	loopback := &http.Transport{MaxIdleConnsPerHost: 4}
	defer loopback.CloseIdleConnections()
	var waits permits.WaitHistogram
	for _, base := range []struct {
		name string
		rt   http.RoundTripper
		url  string
	}{{"inprocess", okBase{}, "http://api.test/"}, {"loopback", loopback, srv.URL}} {
		for _, obs := range []struct {
			name string
			opts []httplimit.TransportOption
		}{
			{"none", nil},
			{"histogram", []httplimit.TransportOption{httplimit.WithObserver(&waits)}},
		} {
			b.Run("base="+base.name+"/observer="+obs.name, func(b *testing.B) {
				tr, err := httplimit.NewTransport(permits.Unlimited, append(obs.opts, httplimit.WithBase(base.rt))...)
				if err != nil {
					b.Fatal(err)
				}
				roundTrips(b, tr, base.url)
			})
		}
	}
}

func roundTrips(b *testing.B, tr http.RoundTripper, url string) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := tr.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
}
