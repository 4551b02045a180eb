package traffic_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/traffic"
)

func TestReadCSV(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []traffic.Arrival
	}{
		{"seconds", "0\n0.5,3\n12.000000001\n", []traffic.Arrival{{At: 0, Cost: 1}, {At: 500 * time.Millisecond, Cost: 3}, {At: 12*time.Second + 1, Cost: 1}}},
		{"durations", "1.5s\n 2m , 4\n", []traffic.Arrival{{At: 1500 * time.Millisecond, Cost: 1}, {At: 2 * time.Minute, Cost: 4}}},
		{"header and comments", "time,cost\n# recorded on the 1st\n\n.25,2\n", []traffic.Arrival{{At: 250 * time.Millisecond, Cost: 2}}},
		{"instants", "2025-03-01T12:00:01Z,2\n2025-03-01T12:00:00.5Z\n2025-03-01T13:00:00+01:00\n",
			[]traffic.Arrival{{At: 500 * time.Millisecond, Cost: 2}, {At: 0, Cost: 1}, {At: -500 * time.Millisecond, Cost: 1}}},
	} {
		got, err := traffic.ReadCSV(strings.NewReader(tc.in), "t.csv")
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if tc.name == "instants" {
			// In order of instant, from the earliest, the third row (12:00:00Z).
			tc.want = []traffic.Arrival{{At: 0, Cost: 1}, {At: 500 * time.Millisecond, Cost: 1}, {At: time.Second, Cost: 2}}
		}
		if !equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestReadCSVErrors(t *testing.T) {
	for _, tc := range []struct{ in, says string }{
		{"1\n2,0\n", "t.csv:2: cost \"0\" is not a whole number"},
		{"1\nsoon\n", `t.csv:2: time "soon" is neither`},
		{"x1,y\n", `t.csv:1: time "x1"`},
		{"1,2,3\n", "t.csv:1: 3 fields"},
		{"-1s\n", "before the start"},
		{"1\n2025-03-01T12:00:00Z\n", "t.csv:2: mixes RFC 3339 instants and offsets"},
		{"1\n\"2\n", "t.csv:2:"},
		{"0001-01-01T00:00:00Z\n", "outside the years"},
		{"10\n1m30s\n2m40s\n20\n", "t.csv:4: 20s is more than 1m before line 2's 1m30s"},
		{"1.0000000001\n", "neither seconds"},
	} {
		_, err := traffic.ReadCSV(strings.NewReader(tc.in), "t.csv")
		switch {
		case err == nil:
			t.Errorf("ReadCSV(%q) succeeded, want %q", tc.in, tc.says)
		case !errors.Is(err, traffic.ErrInvalid):
			t.Errorf("ReadCSV(%q) = %v, not ErrInvalid", tc.in, err)
		case !strings.Contains(err.Error(), tc.says):
			t.Errorf("ReadCSV(%q) = %q, want it to say %q", tc.in, err, tc.says)
		}
	}
}

func TestReplayTakesItsDuration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "replay.csv")
	if err := os.WriteFile(path, []byte("time,cost\n2.5,1\n0.5,2\n61.2,1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ps := mustParse(t, "csv:"+path, "spike:1@61.5s")
	a, d, err := traffic.Generate(ps, 0, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d != 62*time.Second {
		t.Errorf("duration from the file = %v, want 62s (the latest row, rounded up)", d)
	}
	want := []traffic.Arrival{{At: 500 * time.Millisecond, Cost: 2}, {At: 2500 * time.Millisecond, Cost: 1}, {At: 61200 * time.Millisecond, Cost: 1}, {At: 61500 * time.Millisecond, Cost: 1}}
	if !equal(a, want) {
		t.Errorf("replay = %v, want %v", a, want)
	}
	// A shorter duration cuts the replay.
	a, _, err = traffic.Generate(ps, 3*time.Second, 1, nil)
	if err != nil || len(a) != 2 {
		t.Errorf("replay cut at 3s = %v, %v; want the first two rows", a, err)
	}
	missing := mustParse(t, "csv:"+filepath.Join(t.TempDir(), "missing.csv"))
	if _, _, err := traffic.Generate(missing, 0, 1, nil); !errors.Is(err, traffic.ErrInvalid) {
		t.Errorf("a missing file: %v", err)
	}
}
