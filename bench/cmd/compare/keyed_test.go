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
	for _, want := range []string{"## Keyed limits", "| sluice keyed |", "| httprate |",
		"sluice TryAcquireQuota", "httprate OnLimit", "| 32 |"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, "error") {
		t.Errorf("report has an error cell:\n%s", report)
	}
}

func TestMiddlewareSectionPrintsTheShadowBesideTheEnforcing(t *testing.T) {
	var out strings.Builder
	if err := run(tiny("^middleware$"), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	report := out.String()
	for _, want := range []string{"## HTTP middleware", "**Refused**", "| 32 |", "sluice httplimit", "sluice shadow", "shadow ÷ enforcing", "httprate LimitByIP"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, "error") {
		t.Errorf("report has an error cell:\n%s", report)
	}
}
