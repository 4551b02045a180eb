package ownermodel

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"time"

	"github.com/sluicehq/sluice/algorithms"
)

// The reference model: a GCRA by virtual scheduling, in ticks of 1/Count
// ns so that every rate is exact. A grant of c units at t conforms when
// max(tat, t) + c·T − t ≤ burst·T, and moves tat there; a debt moves it
// on without a check (the call used it, the limiter could not refuse);
// a new rate keeps the units owed, paid at the new rate (as
// algorithms.Tunable says), rounded down: the model is never stricter than
// an exact limiter.

// event is one entry of a rate domain's timeline.
type event struct {
	at    time.Duration
	order int // at one instant: grants, then rate changes, then debts
	units int64
	rate  algorithms.Rate
	call  *Call
}

// timeline returns rate domain d's grants used (exact instants only),
// rate changes and debts, in time order.
func (l *Log) timeline(d int) []event {
	var evs []event
	calls := l.Calls
	if l.Admitted != nil {
		calls = l.Admitted
	}
	for _, c := range calls {
		if l.rateDom(c.Dom) == d && c.Exact && c.Used() > 0 {
			evs = append(evs, event{at: c.At, units: c.Used(), call: c})
		}
	}
	for _, r := range l.Rates {
		if l.rateDom(r.Dom) == d {
			evs = append(evs, event{at: r.At, order: 1, rate: r.Rate})
		}
	}
	for _, x := range l.Debts {
		if l.rateDom(x.Dom) == d {
			evs = append(evs, event{at: x.At, order: 2, units: x.Units})
		}
	}
	slices.SortStableFunc(evs, func(a, b event) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.order - b.order
	})
	return evs
}

// rateDom is the rate domain of a FIFO domain: one for lanes.
func (l *Log) rateDom(dom int) int {
	if l.Shared {
		return 0
	}
	return dom
}

func (l *Log) rateDoms() int {
	if l.Shared {
		return 1
	}
	return l.Domains
}

// checkModel plays every rate domain's timeline through the model.
func (l *Log) checkModel() error {
	for d := range l.rateDoms() {
		m := gcraModel{count: l.Rate.Count, per: int64(l.Rate.Per), burst: l.Burst, slack: int64(l.Resolution)}
		for _, ev := range l.timeline(d) {
			switch ev.order {
			case 0:
				if !m.admit(ev.at, ev.units) {
					return fmt.Errorf("model: %v does not conform to GCRA %v burst %d (tat %v ahead)",
						ev.call, m.rate(), m.burst, m.ahead(ev.at))
				}
			case 1:
				m.setRate(ev.at, ev.rate)
			case 2:
				m.charge(ev.at, ev.units)
			}
		}
	}
	return nil
}

type gcraModel struct {
	count, per, burst int64
	slack             int64 // ns a grant may lie late (Config.Resolution)
	tat               int64 // ticks of 1/count ns
	started           bool
}

func (m *gcraModel) rate() algorithms.Rate {
	return algorithms.Rate{Count: m.count, Per: time.Duration(m.per)}
}

func (m *gcraModel) now(at time.Duration) int64 {
	n := int64(at) * m.count
	if !m.started {
		m.tat, m.started = n, true
	}
	return n
}

// ahead is how far tat is ahead of at, in ns.
func (m *gcraModel) ahead(at time.Duration) time.Duration {
	return time.Duration((m.tat - m.now(at)) / m.count)
}

func (m *gcraModel) admit(at time.Duration, units int64) bool {
	n := m.now(at)
	next := max(m.tat, n) + units*m.per
	if next-n > m.burst*m.per+m.slack*m.count {
		return false
	}
	m.tat = next
	return true
}

func (m *gcraModel) charge(at time.Duration, units int64) {
	n := m.now(at)
	m.tat = max(m.tat, n) + units*m.per
}

func (m *gcraModel) setRate(at time.Duration, r algorithms.Rate) {
	n := m.now(at)
	owed := new(big.Int).Mul(big.NewInt(max(m.tat-n, 0)), big.NewInt(int64(r.Per)))
	owed.Quo(owed, big.NewInt(m.per)) // rounded down: never stricter
	m.count, m.per = r.Count, int64(r.Per)
	m.tat = int64(at)*m.count + owed.Int64()
}

// checkBound checks, for every rate domain, that the units used over every
// window [t1, t2] of its grants are at most burst + floor(∫ rate): what a
// GCRA whose owed units carry over a change of rate admits (the model
// implies it; this is the documented bound, checked on its own).
func (l *Log) checkBound() error {
	for d := range l.rateDoms() {
		var gs []*Call
		var rates []RateChange
		for _, ev := range l.timeline(d) {
			switch ev.order {
			case 0:
				gs = append(gs, ev.call)
			case 1:
				rates = append(rates, RateChange{At: ev.at, Rate: ev.rate})
			}
		}
		if err := windows(gs, l.Rate, rates, l.Burst, l.Resolution); err != nil {
			return err
		}
	}
	return nil
}

// windows checks every window of gs, sorted by instant.
func windows(gs []*Call, r algorithms.Rate, rates []RateChange, burst int64, res time.Duration) error {
	for i := range gs {
		if i > 0 && gs[i-1].At == gs[i].At {
			continue // the window from the first grant of an instant covers it
		}
		var sum int64
		for j := i; j < len(gs); j++ {
			sum += gs[j].Used()
			if j+1 < len(gs) && gs[j+1].At == gs[j].At {
				continue
			}
			if limit := burst + units(gs[i].At, gs[j].At+res, r, rates); sum > limit {
				return fmt.Errorf("bound: %d units in [%v, %v], at most %d (burst %d): from %v to %v",
					sum, gs[i].At, gs[j].At, limit, burst, gs[i], gs[j])
			}
		}
	}
	return nil
}

// units is floor(∫ rate) over [t1, t2]: exact at one rate, and with a
// margin of 1e-9 units across changes, far below what a nanosecond is
// worth at any rate here.
func units(t1, t2 time.Duration, r algorithms.Rate, rates []RateChange) int64 {
	var x float64
	single := true
	for _, c := range rates {
		if c.At > t1 && c.At < t2 {
			single = false
		}
	}
	if single {
		for _, c := range rates {
			if c.At <= t1 {
				r = c.Rate
			}
		}
		return int64(t2-t1) * r.Count / int64(r.Per)
	}
	from := t1
	for _, c := range rates {
		if c.At > t1 && c.At < t2 {
			x += float64(c.At-from) * float64(r.Count) / float64(r.Per)
			from = c.At
		}
		if c.At < t2 {
			r = c.Rate
		}
	}
	x += float64(t2-from) * float64(r.Count) / float64(r.Per)
	return int64(math.Floor(x + 1e-9))
}

// admissions makes the model's grants of what the owner told (Admitter):
// one exact call each, in the domain 0.
func (l *Log) admissions(as []Admission, t0 time.Time) {
	l.Admitted = make([]*Call, 0, len(as))
	for i, a := range as {
		at := a.At.Sub(t0)
		l.Admitted = append(l.Admitted, &Call{Seq: -1 - i, Cost: a.Cost, Arrived: at, Returned: at, Granted: true, At: at, Exact: true})
	}
}
