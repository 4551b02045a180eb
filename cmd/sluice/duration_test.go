package main

import (
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
