package main

import (
	"io"
	"strings"
	"testing"
)

func TestKeyedSectionPrintsItsTables(t *testing.T) {
	var out strings.Builder
	if err := run(tiny("^keyed$"), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	report := out.String()
	for _, want := range []string{"## Keyed limits and HTTP middleware", "| sluice keyed |", "| httprate |",
		"sluice TryAcquireQuota", "httprate OnLimit", "| 32 |", "sluice httplimit", "httprate LimitByIP"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, "error") {
		t.Errorf("report has an error cell:\n%s", report)
	}
}
