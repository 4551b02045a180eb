package algorithms_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
)

// CloseGate closes the lock-free path whatever the state (one with room,
// that AllowOrCloseAt would not close on), changes nothing else (the owner
// then takes the whole capacity), and OpenGate opens it again.
func TestCloseGateClosesTheLockFreePathUntilOpened(t *testing.T) {
	rate := algorithms.PerSecond(10)
	mk := map[string]func() (algorithms.Gated, error){
		"GCRA":        func() (algorithms.Gated, error) { return algorithms.NewGCRA(rate, 5) },
		"TokenBucket": func() (algorithms.Gated, error) { return algorithms.NewTokenBucket(rate, 5) },
		"LeakyBucket": func() (algorithms.Gated, error) { return algorithms.NewLeakyBucket(rate, 5) },
		"FixedWindow": func() (algorithms.Gated, error) { return algorithms.NewFixedWindow(rate) },
	}
	now := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	for name, make := range mk {
		g, err := make()
		if err != nil {
			t.Fatal(err)
		}
		if !g.LockFree() {
			t.Fatalf("%s: no lock-free form", name)
		}
		g.CloseGate()
		g.CloseGate() // twice: still closed, nothing else changed
		if _, open := g.TryAllowAt(now, 1); open {
			t.Errorf("%s: TryAllowAt decided with the gate closed", name)
		}
		if _, _, open := g.TryAdmitAt(now, 1); open {
			t.Errorf("%s: TryAdmitAt decided with the gate closed", name)
		}
		if d := g.AllowAt(now, g.Capacity()); !d.Allowed {
			t.Errorf("%s: the owner's AllowAt found the state changed: %+v", name, d)
		}
		g.OpenGate()
		if d, open := g.TryAllowAt(now, 1); !open || d.Allowed {
			t.Errorf("%s: after OpenGate: open %v, %+v (the capacity is taken)", name, open, d)
		}
	}
}
