package traffic_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/traffic"
)

// FuzzParse: a pattern either fails with ErrInvalid or reads back from its
// String, and generating a short run from it never panics or hangs.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"steady:1000/s", "poisson:90/1m,cost=2", "onoff:200/s,on=5s,off=10s", "spike:100@59s,100@1m0.5s",
		"csv:x.csv", "steady:1/ns", "spike:9223372036854775807@1s", "onoff:1/s,on=1ns,off=1ns,until=1h",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := traffic.Parse(s)
		if err != nil {
			if !errors.Is(err, traffic.ErrInvalid) {
				t.Fatalf("Parse(%q) = %v, not ErrInvalid", s, err)
			}
			return
		}
		back, err := traffic.Parse(p.String())
		if err != nil || back.String() != p.String() {
			t.Fatalf("Parse(%q).String() = %q reads back as %q, %v", s, p.String(), back.String(), err)
		}
		if p.Kind == traffic.CSV {
			return
		}
		a, _, err := traffic.Generate([]traffic.Pattern{p}, time.Millisecond, 1, noFiles)
		if err != nil && !errors.Is(err, traffic.ErrInvalid) {
			t.Fatalf("Generate(%q) = %v", s, err)
		}
		for i := range a {
			if a[i].At < 0 || a[i].At >= time.Millisecond || a[i].Cost < 1 || (i > 0 && a[i].At < a[i-1].At) {
				t.Fatalf("Generate(%q): bad arrival %d: %+v", s, i, a[i])
			}
		}
	})
}

// FuzzReadCSV: any file is read or refused with ErrInvalid; what is read has
// non-negative instants and costs of at least 1.
func FuzzReadCSV(f *testing.F) {
	for _, s := range []string{"0\n0.5,3\n", "time,cost\n1s,2\n", "2025-03-01T12:00:01Z,2\n", "\"", "1,2,3", "#\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := traffic.ReadCSV(strings.NewReader(s), "f.csv")
		if err != nil {
			if !errors.Is(err, traffic.ErrInvalid) {
				t.Fatalf("ReadCSV(%q) = %v, not ErrInvalid", s, err)
			}
			return
		}
		for _, x := range a {
			if x.At < 0 || x.Cost < 1 {
				t.Fatalf("ReadCSV(%q): bad arrival %+v", s, x)
			}
		}
	})
}

// FuzzReplay: any log or JSON-lines file, under any spec, is read or
// refused with ErrInvalid, never a panic or a hang; what is read is in
// order with costs of at least 1.
func FuzzReplay(f *testing.F) {
	f.Add("log:x", accessLog)
	f.Add("jsonl:x,time=ts,key=k,cost=c", `{"ts":"2025-03-01T12:00:00Z","k":"a","c":3}`+"\n"+`{"ts":1.5e9,"k":2,"c":1}`)
	f.Add("log:x,key=user", "h - u [01/Mar/2025:12:00:00 +0000] \"\" 1 1\n")
	f.Add("jsonl:a,b,time=t", "{}")
	f.Fuzz(func(t *testing.T, spec, in string) {
		p, err := traffic.Parse(spec)
		if err != nil || !(p.Kind == traffic.Log || p.Kind == traffic.JSONL) {
			return
		}
		fl, err := traffic.Plan{Patterns: []traffic.Pattern{p}, Files: func(string) (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader(in)), nil
		}}.Open()
		if err != nil {
			if !errors.Is(err, traffic.ErrInvalid) {
				t.Fatalf("%q: %v, not ErrInvalid", spec, err)
			}
			return
		}
		defer fl.Close()
		a, err := traffic.Collect(fl)
		if err != nil && !errors.Is(err, traffic.ErrInvalid) {
			t.Fatalf("%q: %v, not ErrInvalid", spec, err)
		}
		for i := range a {
			if a[i].Cost < 1 || a[i].At < 0 || (i > 0 && a[i].At < a[i-1].At) {
				t.Fatalf("bad arrival %d: %+v", i, a[i])
			}
		}
	})
}
