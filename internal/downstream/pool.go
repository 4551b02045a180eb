package downstream

import (
	"time"

	"github.com/sluicehq/sluice/actor"
)

// gather is how long samples gather before the controller decides on them,
// as actor.AdaptivePool's owner does (its sampleEvery).
const gather = time.Millisecond

// pool is the model of an AdaptivePool WithoutQueue: a limit, the units in
// flight, and the samples on their way to the controller.
type pool struct {
	cfg      Pool
	limit    int64
	inFlight int64
	pending  []actor.Sample
	due      time.Duration // when the pending samples are decided on; -1: none
	samples  int64
	changes  int64
}

func newPool(cfg Pool) *pool {
	return &pool{cfg: cfg, limit: cfg.Initial, due: -1}
}

// try admits one request if it fits under the limit and returns the units
// in flight after it, its own included.
func (p *pool) try() (bool, int64) {
	if p.inFlight >= p.limit {
		return false, p.inFlight
	}
	p.inFlight++
	return true, p.inFlight
}

// done gives a unit back and queues the sample for the controller.
func (p *pool) done(s actor.Sample) {
	p.inFlight--
	if p.cfg.Controller == nil || s.Outcome == actor.Dropped {
		return
	}
	p.pending = append(p.pending, s)
	if p.due < 0 {
		p.due = s.At + gather
	}
}

// decide is the owner's turn: the controller sees every pending sample in
// order and the pool clamps each answer, as the real pool's update does.
func (p *pool) decide() {
	for _, s := range p.pending {
		p.samples++
		l := min(max(p.cfg.Controller.Update(s, p.limit), p.cfg.Floor), p.cfg.Ceiling)
		if l != p.limit {
			p.changes++
		}
		p.limit = l
	}
	p.pending, p.due = p.pending[:0], -1
}
