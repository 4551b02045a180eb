package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestSeriesBinsFromTheRunLength: with AutoBin, a run of any length is
// drawn in a round width and at most ChartBins bins (at least ChartBins/2.5
// once the run is long enough), whether its length is known at the start
// or only at the end, and merging bins keeps every unit.
func TestSeriesBinsFromTheRunLength(t *testing.T) {
	for _, d := range []time.Duration{3 * time.Second, time.Minute, 3 * time.Minute, 37 * time.Minute, 5 * time.Hour,
		24 * time.Hour, 12 * 24 * time.Hour, 366 * 24 * time.Hour} {
		for _, known := range []bool{true, false} {
			start := time.Duration(0)
			if known {
				start = d
			}
			s := newSeries(AutoBin, start)
			var sum int64
			for k := range int64(5000) {
				at := int64(d) / 5000 * k
				s.add(&s.offered, at, 1)
				sum++
			}
			width, off, adm := s.finish(d)
			if len(off) > ChartBins || len(off) < ChartBins*2/5 || len(adm) != len(off) {
				t.Errorf("%v (known %v): %d bins of %v", d, known, len(off), width)
			}
			if !slices.Contains(rounds, width) {
				t.Errorf("%v: width %v is not round", d, width)
			}
			var got int64
			for _, u := range off {
				got += u
			}
			if got != sum {
				t.Errorf("%v: %d units in the bins, %d added", d, got, sum)
			}
		}
	}
}

// TestDistFoldsWithinPrecision: past exactWaits the distribution is a
// histogram whose ranks are within 1/1024 above the exact ones.
func TestDistFoldsWithinPrecision(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var d dist
	var all []int64
	for range exactWaits + exactWaits/5 {
		w := rng.Int64N(int64(time.Hour))
		if rng.IntN(10) == 0 {
			w = 0
		}
		d.add(w)
		all = append(all, w)
	}
	if d.hist == nil {
		t.Fatal("never folded")
	}
	slices.Sort(all)
	for _, k := range []int64{1, 1000, int64(len(all)) / 2, int64(len(all)) * 99 / 100, int64(len(all))} {
		exact := all[k-1]
		got := d.rank(k, all[len(all)-1])
		if got < exact || got > exact+exact/1024 {
			t.Errorf("rank %d: %d, exact %d", k, got, exact)
		}
	}
}
