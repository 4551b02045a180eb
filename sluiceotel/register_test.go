package sluiceotel_test

import (
	"errors"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/metric/noop"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/sluiceotel"
)

// A source is read when the reader collects, once per collection, and
// never otherwise: registering reads nothing, and neither does anything
// between two collections.
func TestSourcesAreReadOnlyWhenCollected(t *testing.T) {
	mp, reader := newReader(t)
	var reads int
	stats := func() permits.Stats { reads++; return permits.Stats{Granted: uint64(reads)} }
	reg, err := sluiceotel.Register(mp.Meter("test"), sluiceotel.Limiter("api", stats))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	if reads != 0 {
		t.Fatalf("Register read the source %d times", reads)
	}
	for want := 1; want <= 3; want++ {
		collect(t, reader)
		if reads != want {
			t.Fatalf("after %d collections the source was read %d times", want, reads)
		}
	}
}

// After Unregister the sources are no longer read and their series end.
func TestUnregisterStopsReadingTheSources(t *testing.T) {
	mp, reader := newReader(t)
	var reads int
	stats := func() permits.Stats { reads++; return permits.Stats{} }
	reg, err := sluiceotel.Register(mp.Meter("test"), sluiceotel.Limiter("api", stats))
	if err != nil {
		t.Fatal(err)
	}
	collect(t, reader)
	if err := reg.Unregister(); err != nil {
		t.Fatal(err)
	}
	if err := reg.Unregister(); err != nil {
		t.Fatalf("a second Unregister: %v", err)
	}
	if got := collect(t, reader); len(got) != 0 || reads != 1 {
		t.Fatalf("after Unregister: %d reads, collected %q", reads, got)
	}
}

// Two registrations on one meter report side by side.
func TestTwoRegistrationsOnOneMeterReportSideBySide(t *testing.T) {
	mp, reader := newReader(t)
	meter := mp.Meter("test")
	for _, name := range []string{"a", "b"} {
		reg, err := sluiceotel.Register(meter, sluiceotel.Limiter(name, func() permits.Stats {
			return permits.Stats{Granted: uint64(len(name))}
		}))
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Unregister()
	}
	got := collect(t, reader)
	for _, want := range []string{
		"counter sluice.limiter.granted{sluice.limiter.name=a} 1",
		"counter sluice.limiter.granted{sluice.limiter.name=b} 1",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("missing %q in %q", want, got)
		}
	}
}

// Bad input is an error matching permits.ErrInvalidConfig, never a panic,
// and it registers nothing.
func TestBadSourcesAreConfigurationErrors(t *testing.T) {
	br, _ := breaker.New()
	b, _ := budget.New()
	ok := sluiceotel.Limiter("ok", func() permits.Stats { return permits.Stats{} })
	cases := map[string][]sluiceotel.Source{
		"no sources":            nil,
		"an empty name":         {sluiceotel.Limiter("", ok0)},
		"a nil stats":           {sluiceotel.Limiter("api", nil)},
		"a nil keyed stats":     {sluiceotel.Keyed("api", (func() keyed.Stats)(nil))},
		"a nil pool stats":      {sluiceotel.Pool("api", (func() actor.PoolStats)(nil))},
		"a nil snapshot":        {sluiceotel.Breaker(nil)},
		"a nil budget stats":    {sluiceotel.Budget(nil)},
		"a zero Source":         {{}},
		"two limiters named ok": {ok, ok},
		"a pool named as one":   {ok, sluiceotel.Pool("ok", func() actor.PoolStats { return actor.PoolStats{} })},
		"two unnamed breakers":  {sluiceotel.Breaker(br.Snapshot), sluiceotel.Breaker(br.Snapshot)},
		"two unnamed budgets":   {sluiceotel.Budget(b.Stats), sluiceotel.Budget(b.Stats)},
	}
	for name, sources := range cases {
		reg, err := sluiceotel.Register(noop.NewMeterProvider().Meter("test"), sources...)
		if !errors.Is(err, permits.ErrInvalidConfig) || reg != nil {
			t.Errorf("%s: got %v, %v; want an error matching ErrInvalidConfig", name, reg, err)
		}
	}
	if _, err := sluiceotel.Register(nil, ok); !errors.Is(err, permits.ErrInvalidConfig) {
		t.Errorf("a nil meter: got %v", err)
	}
}

func ok0() permits.Stats { return permits.Stats{} }

// A nil option is ignored, as actor's are.
func TestANilSourceOptionIsIgnored(t *testing.T) {
	reg, err := sluiceotel.Register(noop.NewMeterProvider().Meter("test"), sluiceotel.Limiter("api", ok0, nil))
	if err != nil {
		t.Fatal(err)
	}
	_ = reg.Unregister()
}
