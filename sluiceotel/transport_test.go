package sluiceotel_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/internal/metricsrc/metricsrctest"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/sluiceotel"
)

// A Transport reports its counters, its pauses by the status that asked,
// its responses by class, and the hosts paused now, after the timeline of
// metricsrctest.Send (a 429 retried, a 404, a 503 asking past the cap);
// no host is an attribute.
func TestATransportReportsItsPausesByReasonAndResponsesByClass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mp, reader := newReader(t)
		tr, err := metricsrctest.NewTransport()
		if err != nil {
			t.Fatal(err)
		}
		reg, err := sluiceotel.Register(mp.Meter("test"), sluiceotel.Transport("api", tr.Stats))
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Unregister()
		if err := metricsrctest.Send(tr); err != nil {
			t.Fatal(err)
		}

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
	tr, err := metricsrctest.NewTransport()
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]sluiceotel.Source{
		"no name":  sluiceotel.Transport("", tr.Stats),
		"no stats": sluiceotel.Transport("api", nil),
	} {
		if _, err := sluiceotel.Register(mp.Meter("test"), src); !errors.Is(err, permits.ErrInvalidConfig) {
			t.Errorf("%s: %v, want an error matching permits.ErrInvalidConfig", name, err)
		}
	}
}
