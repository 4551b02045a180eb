package actor

// AdaptiveStats is a snapshot of an adaptive pool: the counters every
// limiter shares, the limit now and its range, the units held, and what
// the controller has seen.
type AdaptiveStats struct {
	PoolStats        // Size is the current limit
	Floor, Ceiling   int64
	Samples, Signals int64 // outcomes the controller saw; those that were Overload or Timeout
	Changes          int64 // times the limit moved
	Lost             int64 // outcomes dropped because the owner's ring was full
}

// Stats returns the counters. They are read one by one, not as one atomic
// snapshot.
func (p *AdaptivePool) Stats() AdaptiveStats {
	w := p.pol.word.Load()
	return AdaptiveStats{
		PoolStats: PoolStats{Stats: p.rt.stats(), Size: adLimit(w), InFlight: adInFlight(w)},
		Floor:     p.pol.floor, Ceiling: p.pol.ceiling,
		Samples: p.pol.nSamples.Load(), Signals: p.pol.nSignals.Load(), Changes: p.pol.nChanges.Load(),
		Lost: p.pol.ring.lost.Load(),
	}
}
