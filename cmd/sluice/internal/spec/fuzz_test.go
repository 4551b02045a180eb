package spec_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
	"github.com/sluicehq/sluice/internal/downstream"
)

// FuzzParse: any input either parses to a limit whose canonical form reads
// back to the same limit and builds an algorithm, or fails with ErrInvalid;
// never a panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"gcra:100/s,burst=10", "sliding:100/1m", "fixed:100/1m", "token:50,1/s", "leaky:2/s,40",
		"token:rate=1/s,capacity=50", "gcra:", ":", "gcra:1/0s", "fixed:9223372036854775807/ns",
		"gcra:1/h,burst=9223372036854775807", "GCRA: 5 , 3/2 days",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := spec.Parse(s)
		if err != nil {
			if !errors.Is(err, spec.ErrInvalid) {
				t.Fatalf("Parse(%q) = %v, not ErrInvalid", s, err)
			}
			return
		}
		back, err := spec.Parse(l.String())
		if err != nil || back != l {
			t.Fatalf("Parse(%q) = %+v; its String %q reads back as %+v, %v", s, l, l.String(), back, err)
		}
		if _, err := l.New(); err != nil {
			t.Fatalf("Parse(%q) succeeded but New fails: %v", s, err)
		}
	})
}

// FuzzParseAdaptive: any input either parses to a spec whose canonical
// form reads back to the same spec and builds a pool the model accepts, or
// fails with ErrInvalid; never a panic.
func FuzzParseAdaptive(f *testing.F) {
	for _, s := range []string{
		"adaptive:vegas", "adaptive:aimd,backoff=0.8,timeout=50ms", "adaptive:gradient2,window=5,queue=2,floor=2",
		"pool:100", "pool:", "adaptive:", "adaptive:vegas,alpha=NaN", "adaptive:aimd,increase=-1", "adaptive:vegas,ceiling=9999999999",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := spec.ParseAdaptive(s)
		if err != nil {
			if !errors.Is(err, spec.ErrInvalid) {
				t.Fatalf("ParseAdaptive(%q) = %v, not ErrInvalid", s, err)
			}
			return
		}
		back, err := spec.ParseAdaptive(a.String())
		if err != nil || !back.Equal(a) {
			t.Fatalf("ParseAdaptive(%q) = %v; it reads back as %v, %v", s, a, back, err)
		}
		if _, err := downstream.New(fuzzDownstream, a.Pool(), time.Second, 1); err != nil {
			t.Fatalf("ParseAdaptive(%q) succeeded but the model refuses it: %v", s, err)
		}
	})
}

var fuzzDownstream = downstream.Config{Phases: []downstream.Phase{{Servers: 1, Service: downstream.Service{Mean: time.Millisecond}}}}

// FuzzParseDownstream: any input either parses to a downstream the model
// accepts, whose canonical form reads back to it, or fails with
// ErrInvalid; never a panic.
func FuzzParseDownstream(f *testing.F) {
	for _, s := range []string{
		"servers=100,service=10ms±1ms,at=30s:servers=40", "servers=1,service=exp:1s,queue=0", "servers=1,service=1ms+-1ms",
		"at=1s:servers=1", "servers=10,service=1ms,at=5s:", "servers=99999999,service=1h", ",,", "servers=1,service=1ms,at=1s:servers=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := spec.ParseDownstream(s)
		if err != nil {
			if !errors.Is(err, spec.ErrInvalid) {
				t.Fatalf("ParseDownstream(%q) = %v, not ErrInvalid", s, err)
			}
			return
		}
		if _, err := downstream.New(c, downstream.Pool{Floor: 1, Initial: 1, Ceiling: 1}, time.Second, 1); err != nil {
			t.Fatalf("ParseDownstream(%q) succeeded but the model refuses it: %v", s, err)
		}
		text := spec.FormatDownstream(c)
		back, err := spec.ParseDownstream(text)
		if err != nil || spec.FormatDownstream(back) != text || len(back.Phases) != len(c.Phases) {
			t.Fatalf("ParseDownstream(%q): its form %q reads back as %+v, %v", s, text, back, err)
		}
		for i := range c.Phases {
			if back.Phases[i] != c.Phases[i] {
				t.Fatalf("ParseDownstream(%q): phase %d reads back as %+v, not %+v", s, i, back.Phases[i], c.Phases[i])
			}
		}
	})
}
