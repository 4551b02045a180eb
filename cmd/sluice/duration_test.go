package main

import (
	"strings"
	"testing"
)

// TestDefaultDurationCoversEverySpike: without -duration the run lasts a
// minute or up to the latest spike, whichever is later; the README's
// boundary example keeps its second burst.
func TestDefaultDurationCoversEverySpike(t *testing.T) {
	code, out, errs := sluice("simulate", "-limit", "sliding:100/1m", "-traffic", "spike:80@58s,80@1m2s", "-max-wait", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if got := column(t, out, "sliding:100/m", "offered"); got != "160" {
		t.Errorf("offered %s, want both bursts (160):\n%s", got, out)
	}
}

// TestArrivalsPastDurationAreReported: an explicit -duration that leaves
// arrivals out says how many and from when.
func TestArrivalsPastDurationAreReported(t *testing.T) {
	code, out, errs := sluice("simulate", "-limit", "sliding:100/1m", "-traffic", "spike:80@58s,80@1m2s", "-duration", "1m")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out+errs, "80 arrivals from 1m2s") || !strings.Contains(out+errs, "left out") {
		t.Errorf("nothing says that 80 arrivals from 1m2s were left out:\n%s%s", out, errs)
	}
}

// TestNoArrivalsIsAnError: traffic that makes no arrivals in the run fails
// with a message, not an empty table and exit 0.
func TestNoArrivalsIsAnError(t *testing.T) {
	for _, args := range [][]string{
		{"simulate", "-limit", "gcra:1/s", "-traffic", "spike:5@2m", "-duration", "1m"},
		{"fit", "-traffic", "spike:5@2m", "-duration", "1m", "-upstream", "1/s", "-p99", "1s"},
	} {
		code, out, errs := sluice(args...)
		if code != 1 || !strings.Contains(errs, "no arrivals") {
			t.Errorf("%q: exit %d, stderr %q, stdout %q; want 1 and a message saying no arrivals", args, code, errs, first(out))
		}
	}
}
