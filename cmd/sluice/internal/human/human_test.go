package human_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/human"
)

// TestExactReadsBack: every exact form parses back to its duration and has
// no trailing zero unit.
func TestExactReadsBack(t *testing.T) {
	for _, d := range []time.Duration{time.Minute, time.Hour, 90 * time.Minute, time.Minute + 500*time.Millisecond, 250 * time.Millisecond, 3*time.Hour + 2*time.Second, 1} {
		s := human.Exact(d)
		back, err := time.ParseDuration(s)
		if err != nil || back != d {
			t.Errorf("Exact(%v) = %q reads back as %v, %v", d, s, back, err)
		}
		if len(s) > 2 && (s[len(s)-2:] == "0s" && s != "0s" && s[len(s)-3] == 'm' || s[len(s)-2:] == "0m" && s[len(s)-3] == 'h') {
			t.Errorf("Exact(%v) = %q ends in a zero unit", d, s)
		}
	}
}
