package spec_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
	"github.com/sluicehq/sluice/internal/downstream"
	"github.com/sluicehq/sluice/permits"
)

func TestAdaptiveSpecsReadBackCanonically(t *testing.T) {
	for in, want := range map[string]string{
		"adaptive:vegas": "adaptive:vegas,floor=1,initial=20,ceiling=1000",
		" Adaptive: Vegas , ceiling=200, FLOOR=2": "adaptive:vegas,floor=2,initial=20,ceiling=200",
		"adaptive:aimd,timeout=50ms,backoff=0.8":  "adaptive:aimd,floor=1,initial=20,ceiling=1000,backoff=0.8,timeout=50ms",
		"adaptive:gradient2,queue=4,window=100":   "adaptive:gradient2,floor=1,initial=20,ceiling=1000,window=100,queue=4",
		"pool:100":                                "pool:100",
	} {
		a, err := spec.ParseAdaptive(in)
		if err != nil || a.String() != want {
			t.Errorf("ParseAdaptive(%q) = %v, %v; want %s", in, a, err, want)
		}
	}
}

func TestAdaptiveSpecBuildsItsController(t *testing.T) {
	a, err := spec.ParseAdaptive("adaptive:aimd,increase=2,backoff=0.5,timeout=1s,floor=3,initial=4,ceiling=5")
	if err != nil {
		t.Fatal(err)
	}
	p := a.Pool()
	if ctl, ok := p.Controller.(*actor.AIMD); !ok || *ctl != (actor.AIMD{Increase: 2, Backoff: 0.5, Timeout: time.Second}) {
		t.Errorf("controller %#v", p.Controller)
	}
	if [3]int64{p.Floor, p.Initial, p.Ceiling} != [3]int64{3, 4, 5} {
		t.Errorf("limits %d, %d, %d", p.Floor, p.Initial, p.Ceiling)
	}
	if p := must(t, "pool:7").Pool(); p.Controller != nil || p.Initial != 7 {
		t.Errorf("pool:7 is %+v", p)
	}
	if a.Pool().Controller == p.Controller {
		t.Error("two pools share a controller")
	}
}

func must(t *testing.T, s string) spec.Adaptive {
	t.Helper()
	a, err := spec.ParseAdaptive(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestBadAdaptiveSpecNamesThePiece(t *testing.T) {
	for in, want := range map[string]string{
		"adaptive:":                         "unknown controller",
		"adaptive:tcp":                      `unknown controller "tcp"`,
		"pool:0":                            `pool "0"`,
		"pool:x":                            `pool "x"`,
		"adaptive:vegas,beta":               `"beta" is not NAME=VALUE`,
		"adaptive:vegas,backoff=0.5":        `not "backoff"`,
		"adaptive:vegas,alpha=1,alpha=2":    "alpha is given twice",
		"adaptive:vegas,alpha=x":            `alpha "x" is not a number`,
		"adaptive:aimd,timeout=5":           `timeout "5" is not a duration`,
		"adaptive:aimd,backoff=2":           "backoff must be in (0, 1)",
		"adaptive:vegas,floor=10,initial=5": "floor ≤ initial",
		"adaptive:gradient2,window=1.5":     `window "1.5" is not a whole number`,
		"gcra:1/s":                          "want adaptive:",
	} {
		_, err := spec.ParseAdaptive(in)
		if err == nil || !errors.Is(err, spec.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseAdaptive(%q) = %v; want ErrInvalid saying %q", in, err, want)
		}
	}
	_, err := spec.ParseAdaptive("adaptive:aimd,backoff=2")
	if !errors.Is(err, permits.ErrInvalidConfig) {
		t.Errorf("the pool's own refusal %v does not match permits.ErrInvalidConfig", err)
	}
}

func TestDownstreamSpecHasPhases(t *testing.T) {
	c, err := spec.ParseDownstream("servers=100,service=10ms±1ms,at=30s:servers=40,at=1m:queue=0,service=exp:20ms")
	if err != nil {
		t.Fatal(err)
	}
	svc := downstream.Service{Mean: 10 * time.Millisecond, Spread: time.Millisecond}
	want := []downstream.Phase{
		{At: 0, Servers: 100, Service: svc, Queue: 10},
		{At: 30 * time.Second, Servers: 40, Service: svc, Queue: 4}, // the default queue follows the servers
		{At: time.Minute, Servers: 40, Service: downstream.Service{Mean: 20 * time.Millisecond, Exp: true}, Queue: 0},
	}
	if len(c.Phases) != 3 {
		t.Fatalf("%+v", c.Phases)
	}
	for i := range want {
		if c.Phases[i] != want[i] {
			t.Errorf("phase %d = %+v, want %+v", i, c.Phases[i], want[i])
		}
	}
	if got := spec.FormatDownstream(c); got != "servers=100,service=10ms±1ms,queue=10,at=30s:servers=40,queue=4,at=1m:service=exp:20ms,queue=0" {
		t.Errorf("canonical form %s", got)
	}
	if c2, err := spec.ParseDownstream("servers=5,service=1s+-0s,queue=2"); err != nil || c2.Phases[0].Service != (downstream.Service{Mean: time.Second}) {
		t.Errorf("+- reads as ±: %+v, %v", c2, err)
	}
}

func TestBadDownstreamSpecNamesTheField(t *testing.T) {
	for in, want := range map[string]string{
		"":                                    `"" is not NAME=VALUE`,
		"servers=10":                          "needs servers=N and service=D",
		"servers=0,service=1ms":               `the start: servers "0"`,
		"servers=10,service=1ms,queue=-1":     `the start: queue "-1"`,
		"servers=10,service=1ms±2ms":          `service "1ms±2ms"`,
		"servers=10,service=exp:0s":           `service "exp:0s"`,
		"servers=10,service=1ms,speed=2":      `unknown field "speed"`,
		"servers=10,service=1ms,at=5s":        "at=5s needs a change after it",
		"servers=10,service=1ms,at=x:queue=1": `"x" is not a positive duration`,
		"servers=10,at=5s:servers=2":          "before its first at=",
		"servers=10,service=1ms,at=5s:servers=2,at=5s:servers=3": "at=5s is not after",
		"servers=10,service=1ms,at=5s:servers=x":                 `at=5s: servers "x"`,
	} {
		_, err := spec.ParseDownstream(in)
		if err == nil || !errors.Is(err, spec.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDownstream(%q) = %v; want ErrInvalid saying %q", in, err, want)
		}
	}
}
