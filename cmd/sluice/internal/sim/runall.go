package sim

import (
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
	"github.com/sluicehq/sluice/cmd/sluice/internal/traffic"
)

// chunk is how many arrivals travel together from the stream to the
// limits: large enough that handing one over costs nothing per arrival
// (24 × 8192 = 192 KB), small enough that a few in flight cost little.
const chunk = 8192

// Spanner is a stream that knows the run's length once it has ended
// (traffic.Feed).
type Spanner interface{ Span() time.Duration }

// Run offers the arrivals (sorted by instant) to one limit.
func Run(arrivals []traffic.Arrival, cfg Config) (*Result, error) {
	res, err := RunStream(traffic.Slice(arrivals), []Config{cfg})
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// RunAll runs each configuration on the same arrivals and returns the
// results in the order of cfgs.
func RunAll(arrivals []traffic.Arrival, cfgs []Config) ([]*Result, error) {
	return RunStream(traffic.Slice(arrivals), cfgs)
}

// RunStream reads the stream once and offers every arrival to each
// configuration, and returns the results in the order of cfgs. With one
// configuration it runs in the caller's goroutine; with several, each runs
// on a goroutine of its own, fed chunks of arrivals as the caller's
// goroutine reads them, so that the limits run side by side on the
// machine's cores while the stream is read once. Memory: a few chunks in
// flight, and each run's own (see run); never the arrivals.
func RunStream(src traffic.Stream, cfgs []Config) ([]*Result, error) {
	runs := make([]*run, len(cfgs))
	for i, c := range cfgs {
		r, err := newRun(c)
		if err != nil {
			return nil, err
		}
		runs[i] = r
	}
	var err error
	if len(runs) == 1 {
		err = serial(src, runs[0])
	} else {
		err = fanOut(src, runs)
	}
	if err != nil {
		return nil, err
	}
	var d time.Duration
	if s, ok := src.(Spanner); ok {
		d = s.Span()
	}
	for _, r := range runs {
		r.drain(d)
	}
	// One width and one span for every series, so that they line up in
	// one file (-series) and on one time axis.
	var width, span int64
	for _, r := range runs {
		if r.bins != nil {
			width = max(width, r.bins.width)
			span = max(span, r.bins.span(), int64(r.cfg.Duration))
		}
	}
	out := make([]*Result, len(runs))
	for i, r := range runs {
		if r.bins != nil && r.bins.auto {
			r.bins.coarsenTo(width)
		}
		r.finish(time.Duration(span))
		out[i] = r.res
	}
	return out, nil
}

func serial(src traffic.Stream, r *run) error {
	buf := make([]traffic.Arrival, chunk)
	for {
		n, err := src.Read(buf)
		r.feed(buf[:n])
		if err == io.EOF || r.res.Stopped {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// batch is one chunk on its way to every run; the last run done with it
// returns it to the free list.
type batch struct {
	a    []traffic.Arrival
	left atomic.Int32
}

func fanOut(src traffic.Stream, runs []*run) error {
	const inFlight = 4 // chunks a run may lag behind the reader
	free := make(chan *batch, inFlight+2)
	for range cap(free) {
		free <- &batch{a: make([]traffic.Arrival, chunk)}
	}
	feeds := make([]chan *batch, len(runs))
	var wg sync.WaitGroup
	// The costliest first, so that the goroutine scheduler starts it first.
	order := slices.Clone(runs)
	slices.SortStableFunc(order, func(a, b *run) int { return cost(b.cfg.Limit.Kind) - cost(a.cfg.Limit.Kind) })
	for i, r := range order {
		feeds[i] = make(chan *batch, inFlight)
		wg.Go(func() {
			for b := range feeds[i] {
				r.feed(b.a)
				if b.left.Add(-1) == 0 {
					free <- b
				}
			}
		})
	}
	var err error
	for {
		b := <-free
		n, rerr := src.Read(b.a[:chunk])
		b.a = b.a[:n]
		if n > 0 {
			b.left.Store(int32(len(feeds)))
			for _, f := range feeds {
				f <- b
			}
		} else {
			free <- b
		}
		if rerr != nil {
			if rerr != io.EOF {
				err = rerr
			}
			break
		}
	}
	for _, f := range feeds {
		close(f)
	}
	wg.Wait()
	return err
}

// cost ranks kinds by their measured cost per arrival, waiting or not.
func cost(k spec.Kind) int {
	switch k {
	case spec.Fixed:
		return 0
	case spec.Sliding:
		return 2
	}
	return 1
}
