package spec_test

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
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
