package downstream

import (
	"slices"
	"time"
)

// Result is what one pool in front of the downstream did: per phase of the
// downstream, and per bin of the run.
type Result struct {
	Pool   Pool
	Phases []PhaseResult
	// Bin is the width of Bins: Bins[k] covers [k·Bin, (k+1)·Bin).
	Bin  time.Duration
	Bins []Bin
	// Samples and Changes count the outcomes the controller saw and the
	// times the limit moved; MaxLimit is the highest limit it reached.
	Samples, Changes, MaxLimit int64
}

// PhaseResult is what became of the requests that arrived in one phase of
// the downstream, [From, To). Offered = Served + Shed + Refused.
type PhaseResult struct {
	From, To time.Duration
	Servers  int
	// Offered arrived; Served the downstream served; Shed the pool
	// refused; Refused the downstream refused (its queue was full).
	Offered, Served, Shed, Refused int64
	// P50 and P99 are the latencies of the served, from the grant to the
	// end of service (queue included), nearest rank.
	P50, P99  time.Duration
	latencies []time.Duration
}

// Goodput is the phase's served requests per second.
func (p PhaseResult) Goodput() float64 {
	return float64(p.Served) / (p.To - p.From).Seconds()
}

// Bin is one bin of the series. Limit is the pool's limit at the bin's end;
// MaxInFlight the most units it had in flight in the bin; Served, Shed and
// Refused count the requests served (by completion), shed and refused (by
// arrival) in the bin; MeanLatency is the served ones' mean latency (0: none).
type Bin struct {
	Limit, MaxInFlight, Served, Shed, Refused int64
	MeanLatency                               time.Duration
	latency                                   time.Duration // sum
}

func newResult(c Config, p Pool, bin time.Duration) *Result {
	r := &Result{Pool: p, Bin: bin, Bins: []Bin{{Limit: p.Initial}}, MaxLimit: p.Initial}
	for i, ph := range c.Phases {
		r.Phases = append(r.Phases, PhaseResult{From: ph.At, Servers: ph.Servers})
		if i > 0 {
			r.Phases[i-1].To = ph.At
		}
	}
	return r
}

// bin returns the bin that holds at, extending the series to it; new bins
// start with the limit the last one ended with.
func (r *Result) bin(at time.Duration) *Bin {
	k := int(at / r.Bin)
	for len(r.Bins) <= k {
		r.Bins = append(r.Bins, Bin{Limit: r.Bins[len(r.Bins)-1].Limit})
	}
	return &r.Bins[k]
}

func (r *Result) limit(at time.Duration, l int64) {
	r.bin(at).Limit = l
	r.MaxLimit = max(r.MaxLimit, l)
}

func (r *Result) inFlight(at time.Duration, n int64) {
	b := r.bin(at)
	b.MaxInFlight = max(b.MaxInFlight, n)
}

func (r *Result) served(phase int, at, rtt time.Duration) {
	p := &r.Phases[phase]
	p.Served++
	p.latencies = append(p.latencies, rtt)
	b := r.bin(at)
	b.Served++
	b.latency += rtt
}

// finish closes the series at end and computes the percentiles.
func (r *Result) finish(end time.Duration, p *pool) {
	r.Samples, r.Changes = p.samples, p.changes
	last := &r.Phases[len(r.Phases)-1]
	last.To = max(end, last.From+1)
	n := int((end + r.Bin - 1) / r.Bin)
	r.bin(end - 1)
	r.Bins = r.Bins[:n]
	for i := range r.Bins {
		if b := &r.Bins[i]; b.Served > 0 {
			b.MeanLatency = b.latency / time.Duration(b.Served)
		}
	}
	for i := range r.Phases {
		ph := &r.Phases[i]
		slices.Sort(ph.latencies)
		ph.P50, ph.P99 = rank(ph.latencies, 50), rank(ph.latencies, 99)
		ph.latencies = nil
	}
}

// rank is the q-th percentile of sorted, nearest rank (0 for none).
func rank(sorted []time.Duration, q int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*q + 99) / 100
	return sorted[max(i, 1)-1]
}

// Total sums the phases: every request of the run.
func (r *Result) Total() PhaseResult {
	t := PhaseResult{From: r.Phases[0].From, To: r.Phases[len(r.Phases)-1].To}
	for _, p := range r.Phases {
		t.Offered += p.Offered
		t.Served += p.Served
		t.Shed += p.Shed
		t.Refused += p.Refused
	}
	return t
}
