package chart_test

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/sluicehq/sluice/cmd/sluice/internal/chart"
	"github.com/sluicehq/sluice/cmd/sluice/internal/sim"
	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
	"github.com/sluicehq/sluice/cmd/sluice/internal/traffic"
)

func results(t *testing.T, maxWait time.Duration, limits ...string) ([]*sim.Result, *spec.Limit) {
	t.Helper()
	p, _ := traffic.Parse("poisson:3/s")
	s, _ := traffic.Parse("spike:60@59s,60@1m")
	a, _, err := traffic.Generate([]traffic.Pattern{p, s}, 2*time.Minute, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	up, _ := spec.ParseUpstream("100/1m")
	var cfgs []sim.Config
	for _, l := range limits {
		ls, err := spec.Parse(l)
		if err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, sim.Config{Limit: ls, MaxWait: maxWait, Window: time.Minute, Upstream: &up, Bin: time.Second, Duration: 2 * time.Minute})
	}
	res, err := sim.RunAll(a, cfgs)
	if err != nil {
		t.Fatal(err)
	}
	return res, &up
}

func TestWrite(t *testing.T) {
	for _, mw := range []time.Duration{0, 5 * time.Second} {
		res, up := results(t, mw, "fixed:100/1m", "gcra:100/1m,burst=10", "sliding:100/1m")
		dir := filepath.Join(t.TempDir(), "charts")
		paths, err := chart.Write(dir, res, chart.Options{Upstream: up, Title: "a test"})
		if err != nil {
			t.Fatal(err)
		}
		if len(paths) != len(chart.Files) {
			t.Fatalf("wrote %v, want %v", paths, chart.Files)
		}
		for i, path := range paths {
			if filepath.Base(path) != chart.Files[i] {
				t.Errorf("path %d is %s, want %s", i, path, chart.Files[i])
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			switch filepath.Ext(path) {
			case ".png":
				img, err := png.Decode(bytes.NewReader(data))
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				// 10 x (3 x 2.3 + 0.3) inches at 110 dpi for the rates.
				if b := img.Bounds(); strings.HasPrefix(filepath.Base(path), "rates") && (b.Dx() != 1100 || b.Dy() != 792) {
					t.Errorf("%s is %dx%d, want 1100x792", path, b.Dx(), b.Dy())
				}
			case ".svg":
				// Well-formed XML, naming every limit.
				d := xml.NewDecoder(bytes.NewReader(data))
				for {
					if _, err := d.Token(); err == io.EOF {
						break
					} else if err != nil {
						t.Fatalf("%s: %v", path, err)
					}
				}
				for _, r := range res {
					if !bytes.Contains(data, []byte(r.Limit.String())) {
						t.Errorf("%s does not name %v", path, r.Limit)
					}
				}
				if strings.HasPrefix(filepath.Base(path), "waits") && mw == 0 && !bytes.Contains(data, []byte("no request waited")) {
					t.Errorf("%s: nobody waited, and the title does not say so", path)
				}
			}
		}
	}
}

func TestWriteErrors(t *testing.T) {
	if _, err := chart.Write(t.TempDir(), nil, chart.Options{}); err == nil {
		t.Error("Write with no results succeeded")
	}
	res, _ := results(t, 0, "gcra:1/s")
	res[0].Bin = 0
	if _, err := chart.Write(t.TempDir(), res, chart.Options{}); err == nil {
		t.Error("Write of a result without series succeeded")
	}
	res, _ = results(t, 0, "gcra:1/s")
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := chart.Write(filepath.Join(file, "sub"), res, chart.Options{}); err == nil {
		t.Error("Write into a path under a file succeeded")
	}
}

func TestPerSecond(t *testing.T) {
	got := chart.PerSecond([]int64{5, 0, 12}, 500*time.Millisecond, time.Second)
	want := plotter.XYs{{X: 0, Y: 10}, {X: 0.5, Y: 0}, {X: 1, Y: 24}, {X: 1.5, Y: 24}}
	if len(got) != len(want) {
		t.Fatalf("PerSecond = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("PerSecond[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	if len(chart.PerSecond(nil, time.Second, time.Second)) != 0 {
		t.Error("PerSecond of nothing is not empty")
	}
}

func TestAxis(t *testing.T) {
	for _, tc := range []struct {
		span time.Duration
		name string
	}{{2 * time.Minute, "s"}, {3 * time.Minute, "s"}, {time.Hour, "min"}, {10 * time.Hour, "h"}} {
		if _, name := chart.Axis(tc.span); name != tc.name {
			t.Errorf("Axis(%v) = %s, want %s", tc.span, name, tc.name)
		}
	}
}
