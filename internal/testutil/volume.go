package testutil

import (
	"os"
	"testing"
)

// VolumeEnv names the environment variable that sets how much work the
// property and stress tests do: unset (or "quick"), the default run keeps
// a volume that still fails on the known classes of defects and finishes
// in seconds on a busy machine; "full" runs the volume a property needs to
// mean something (10^6 decisions and more), which .ci/run does once, in a
// step of its own (docs/testing.md).
const VolumeEnv = "SLUICE_VOLUME"

// Full reports whether this run asked for the full volume.
func Full() bool { return os.Getenv(VolumeEnv) == "full" }

// Volume returns full in a full-volume run and quick otherwise; under
// -short, a tenth of quick (at least 1).
func Volume(quick, full int64) int64 {
	switch {
	case Full():
		return full
	case testing.Short():
		return max(quick/10, 1)
	}
	return quick
}

// ReportDecisions logs how many decisions a property or stress test made,
// in the one form .ci/run's full-volume step collects ("decisions: N (name,
// volume full)").
func ReportDecisions(t testing.TB, n int64) {
	t.Helper()
	mode := "quick"
	if Full() {
		mode = "full"
	}
	t.Logf("decisions: %d (%s, volume %s)", n, t.Name(), mode)
}
