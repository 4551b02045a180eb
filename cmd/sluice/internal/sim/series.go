package sim

import "time"

// MaxBins bounds a series of a width given by Config.Bin (8 MB each).
const MaxBins = 1 << 20

// AutoBin, as Config.Bin, chooses the bins' width from the run's length:
// the smallest round width (1, 2 or 5 of a unit, 15 s, 30 s, 15 min, 3 h,
// 6 h, 12 h, days) that draws the run in at most ChartBins bins.
const AutoBin time.Duration = -1

// ChartBins is the most bins AutoBin draws a run in; it draws at least
// about ChartBins/2.5.
const ChartBins = 2000

// fine is how many bins a series keeps while the run lasts before it
// merges them into coarser ones, so that a stream of unknown length is
// binned in constant memory (24,000 bins, 192 KB a series).
const fine = 24_000

// steps are the widths a series keeps while the run lasts, each a multiple
// of the one before, so that merging is exact, and each dividing the round
// widths drawn from it (see rounds).
var steps = []time.Duration{
	time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second, 10 * time.Second,
	time.Minute, 10 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour, 240 * time.Hour, 2400 * time.Hour,
}

// rounds are the widths a run is drawn in.
var rounds = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond,
	50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	24 * time.Hour, 48 * time.Hour, 168 * time.Hour, 336 * time.Hour, 720 * time.Hour, 2400 * time.Hour,
}

// series is the units offered and admitted per bin.
type series struct {
	width             int64 // ns
	auto              bool
	cut               bool // a fixed width ran past MaxBins
	offered, admitted []int64
}

// newSeries keeps bins of width bin, or with AutoBin, of the finest step
// that holds a run of length d (0 if unknown) in fine bins.
func newSeries(bin, d time.Duration) *series {
	if bin == 0 {
		return nil
	}
	if bin > 0 {
		return &series{width: int64(bin)}
	}
	s := &series{width: int64(steps[0]), auto: true}
	for _, w := range steps {
		if s.width = int64(w); int64(d)/int64(w) < fine {
			break
		}
	}
	return s
}

// add counts cost in the bin that holds at.
func (s *series) add(bins *[]int64, at, cost int64) {
	k := at / s.width
	for s.auto && k >= fine {
		s.coarsen()
		k = at / s.width
	}
	if k >= MaxBins {
		s.cut = true
		return
	}
	for int64(len(*bins)) <= k {
		*bins = append(*bins, 0)
	}
	(*bins)[k] += cost
}

// span is how far the bins reach, ns.
func (s *series) span() int64 {
	return max(int64(len(s.offered)), int64(len(s.admitted))) * s.width
}

// coarsenTo merges the bins into steps until they are width wide (a step).
func (s *series) coarsenTo(width int64) {
	for s.width < width {
		s.coarsen()
	}
}

// coarsen merges the bins into those of the next step.
func (s *series) coarsen() {
	i := 0
	for i < len(steps)-1 && int64(steps[i]) <= s.width {
		i++
	}
	f := int64(steps[i]) / s.width
	s.offered, s.admitted = merge(s.offered, f), merge(s.admitted, f)
	s.width = int64(steps[i])
}

func merge(bins []int64, f int64) []int64 {
	out := bins[:(int64(len(bins))+f-1)/f]
	for k := range out {
		var sum int64
		for _, u := range bins[int64(k)*f : min(int64(k+1)*f, int64(len(bins)))] {
			sum += u
		}
		out[k] = sum
	}
	return out
}

// finish pads both series to cover [0, d) and their longest, and with
// AutoBin merges them into the round width that draws that in ChartBins
// bins at most.
func (s *series) finish(d time.Duration) (width time.Duration, offered, admitted []int64) {
	n := max(int64(len(s.offered)), int64(len(s.admitted)), min((int64(d)+s.width-1)/s.width, MaxBins))
	if s.auto {
		span := n * s.width
		for _, w := range rounds {
			if int64(w)%s.width == 0 && (span+int64(w)-1)/int64(w) <= ChartBins {
				f := int64(w) / s.width
				s.offered, s.admitted, s.width = merge(pad(s.offered, n), f), merge(pad(s.admitted, n), f), int64(w)
				n = (n + f - 1) / f
				break
			}
		}
	}
	return time.Duration(s.width), pad(s.offered, n), pad(s.admitted, n)
}

func pad(bins []int64, n int64) []int64 {
	for int64(len(bins)) < n {
		bins = append(bins, 0)
	}
	return bins
}
