package sim

import (
	"io"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/traffic"
	"github.com/sluicehq/sluice/internal/downstream"
)

// Downstream is a run of pools in front of a modelled downstream
// (internal/downstream) instead of rate limits: every arrival is one
// request (its cost and key are not used), offered to each pool's model
// at its instant.
type Downstream struct {
	Config   downstream.Config
	Pools    []downstream.Pool
	Bin      time.Duration // AutoBin: a round width that draws the run in at most 500 bins
	Duration time.Duration // the run's length, if known before the stream ends
	Seed     uint64        // the service times'
}

// chartBins is the most bins AutoBin gives a downstream's series: its
// chart draws a point per bin and pool in each of four panels.
const chartBins = 500

// RunDownstream reads the stream once and offers every arrival to each
// pool, in the caller's goroutine, and returns the results in the order of
// d.Pools. Each pool draws the same service times (one seed) so that they
// differ only in what they admit. Memory: a chunk of arrivals, and one
// latency per served request; with AutoBin and no Duration (a replay whose
// files decide its length), every arrival too, read first to learn the
// run's length.
func RunDownstream(src traffic.Stream, d Downstream) ([]*downstream.Result, error) {
	bin := d.Bin
	if bin <= 0 && d.Duration <= 0 {
		all, err := traffic.Collect(src)
		if err != nil {
			return nil, err
		}
		if n := len(all); n > 0 {
			d.Duration = all[n-1].At + 1
		}
		if s, ok := src.(Spanner); ok {
			d.Duration = max(d.Duration, s.Span())
		}
		src = traffic.Slice(all)
	}
	if bin <= 0 {
		bin = roundBin(max(d.Duration, 1))
	}
	models := make([]*downstream.Model, len(d.Pools))
	for i, p := range d.Pools {
		m, err := downstream.New(d.Config, p, bin, d.Seed)
		if err != nil {
			return nil, err
		}
		models[i] = m
	}
	span, buf := d.Duration, make([]traffic.Arrival, chunk)
	for {
		n, err := src.Read(buf)
		for _, m := range models {
			for _, a := range buf[:n] {
				m.Arrive(a.At)
			}
		}
		if n > 0 {
			span = max(span, buf[n-1].At+1)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if s, ok := src.(Spanner); ok {
		span = max(span, s.Span())
	}
	out := make([]*downstream.Result, len(models))
	for i, m := range models {
		out[i] = m.Finish(span)
	}
	return out, nil
}

// roundBin is the smallest round width that draws span in chartBins bins.
func roundBin(span time.Duration) time.Duration {
	for _, w := range rounds {
		if (span+w-1)/w <= chartBins {
			return w
		}
	}
	return rounds[len(rounds)-1]
}
