package httplimit_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/permits"
)

// anyHost answers 200 for every host, with no network: the hosts a test
// calls need not exist.
type anyHost struct{}

func (anyHost) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("ok")),
		Header: http.Header{}, Request: req}, nil
}

func TestAdaptiveHostsPastTheBoundShareTheOverflowPool(t *testing.T) {
	const hosts = 10_000
	tr, err := httplimit.NewTransport(permits.Unlimited, httplimit.WithBase(anyHost{}), httplimit.WithRetry(),
		httplimit.WithAdaptiveConcurrency(func() actor.Controller { return &actor.AIMD{} }))
	require.NoError(t, err)
	defer tr.Close()
	host := func(i int) string { return fmt.Sprintf("h%d.test", i) }
	for i := range hosts {
		req, _ := http.NewRequest(http.MethodGet, "http://"+host(i)+"/", nil)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
	}
	own := 0
	for i := range hosts {
		if _, ok := tr.HostConcurrency(host(i)); ok {
			own++
			assert.Less(t, i, httplimit.DefaultMaxHosts, "the first hosts sent to get the pools")
		}
	}
	assert.Equal(t, httplimit.DefaultMaxHosts, own, "at most the bound of hosts has a pool")
	st, ok := tr.HostConcurrency(httplimit.OverflowRoute)
	require.True(t, ok, "the hosts past the bound share one more pool")
	assert.Equal(t, uint64(hosts-httplimit.DefaultMaxHosts), st.Granted, "every later host's request went through it")
}

func TestAdaptiveHostKeepsItsPoolWhenTheTableIsFull(t *testing.T) {
	tr, err := httplimit.NewTransport(permits.Unlimited, httplimit.WithBase(anyHost{}), httplimit.WithRetry(),
		httplimit.WithAdaptiveConcurrency(func() actor.Controller { return &actor.AIMD{} }))
	require.NoError(t, err)
	defer tr.Close()
	get := func(h string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+h+"/", nil)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
	}
	get("first.test")
	for i := range httplimit.DefaultMaxHosts {
		get(fmt.Sprintf("h%d.test", i))
	}
	get("first.test")
	st, ok := tr.HostConcurrency("first.test")
	require.True(t, ok)
	assert.Equal(t, uint64(2), st.Granted, "its second request, after the table filled, went to its own pool")
}
