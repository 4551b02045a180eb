package scheduler_test

import (
	"math/big"
	"slices"
)

// refFair is the reference the Fair queue is checked against: the rules of
// fair.go written the plain way, for reading rather than speed. Every
// virtual time is a big.Int (no 128-bit arithmetic, no rebasing, no restart
// from zero when the queue empties: none of them may change an order),
// every flow keeps a slice, and the head is found by scanning every flow
// of every class after every change (no heap, no cached head).
type refFair struct {
	flows     []*refFlow
	class     [8]refClass
	wa, wb    int64
	seq       uint64
	head      *refNode
	last      int64
	headRetry int64
	headSince int64
	hold      int64
}

type refClass struct{ v, a, b, lv *big.Int }

type refFlow struct {
	weight, class int64
	start         *big.Int
	seq           uint64
	queue         []*refNode
}

type refNode struct {
	id            int
	cost, arrival int64
	flow          *refFlow
}

func newRefFair() *refFair {
	m := &refFair{}
	for k := range m.class {
		m.class[k] = refClass{new(big.Int), new(big.Int), new(big.Int), new(big.Int)}
	}
	return m
}

func (m *refFair) addFlow(weight, class int64) *refFlow {
	fl := &refFlow{weight: weight, class: class, start: new(big.Int)}
	m.flows = append(m.flows, fl)
	return fl
}

// refSpan is cost·2^40/weight rounded down: the spec's unit of virtual time.
func refSpan(cost, weight int64) *big.Int {
	s := new(big.Int).Lsh(big.NewInt(cost), 40)
	return s.Quo(s, big.NewInt(weight))
}

func sum(a, b *big.Int) *big.Int { return new(big.Int).Add(a, b) }

func bigMax(a, b *big.Int) *big.Int {
	if a.Cmp(b) >= 0 {
		return new(big.Int).Set(a)
	}
	return new(big.Int).Set(b)
}

func (m *refFair) classBusy(k int) bool {
	for _, fl := range m.flows {
		if fl.class == int64(k) && len(fl.queue) > 0 {
			return true
		}
	}
	return false
}

func (m *refFair) len() int {
	n := 0
	for _, fl := range m.flows {
		n += len(fl.queue)
	}
	return n
}

func (m *refFair) push(n *refNode) {
	fl := n.flow
	if len(fl.queue) == 0 {
		k := int(fl.class)
		if !m.classBusy(k) {
			c := &m.class[k]
			c.a, c.b = new(big.Int).Set(c.lv), new(big.Int).Set(c.lv)
			below := false
			for j := 0; j < k; j++ {
				below = below || m.classBusy(j)
			}
			if !below {
				for j := k + 1; j < 8; j++ {
					if m.classBusy(j) {
						m.class[j].b = bigMax(m.class[j].b, m.class[j].lv)
						break
					}
				}
			}
		}
		fl.start, fl.seq = new(big.Int).Set(m.class[fl.class].v), m.seq
		m.seq++
	}
	fl.queue = append(fl.queue, n)
	m.repick(n.arrival)
}

func (m *refFair) remove(n *refNode, at int64) bool {
	fl := n.flow
	i := slices.Index(fl.queue, n)
	if i < 0 {
		return false
	}
	fl.queue = slices.Delete(fl.queue, i, i+1)
	m.repick(at)
	return true
}

// key compares two flows' heads in a class: finish, arrival, seq.
func (m *refFair) before(x, y *refFlow) bool {
	fx, fy := sum(x.start, refSpan(x.queue[0].cost, x.weight)), sum(y.start, refSpan(y.queue[0].cost, y.weight))
	if c := fx.Cmp(fy); c != 0 {
		return c < 0
	}
	if x.queue[0].arrival != y.queue[0].arrival {
		return x.queue[0].arrival < y.queue[0].arrival
	}
	return x.seq < y.seq
}

func (m *refFair) classTop(k int) *refFlow {
	var top *refFlow
	for _, fl := range m.flows {
		if fl.class == int64(k) && len(fl.queue) > 0 && (top == nil || m.before(fl, top)) {
			top = fl
		}
	}
	return top
}

func (m *refFair) pick() *refFlow {
	var best *refFlow
	for k := 0; k < 8; k++ {
		top := m.classTop(k)
		if top == nil {
			continue
		}
		if best == nil || m.wb == 0 {
			best = top
			continue
		}
		c := &m.class[k]
		ta := sum(c.a, refSpan(top.queue[0].cost, m.wa))
		tb := sum(c.b, refSpan(best.queue[0].cost, m.wb))
		if tb.Cmp(ta) >= 0 {
			best = top
		}
	}
	return best
}

// repick finds the head after a change at at: a new head became head then.
func (m *refFair) repick(at int64) {
	var h *refNode
	if fl := m.pick(); fl != nil {
		h = fl.queue[0]
	}
	if h == m.head {
		return
	}
	m.head, m.headRetry = h, 0
	m.headSince = at
}

func (m *refFair) due(now int64) int64 {
	if m.head == nil {
		return 0
	}
	return max(m.headSince, m.last, m.head.arrival, m.headRetry, m.hold)
}

func (m *refFair) charge(fl *refFlow, cost int64) {
	k := int(fl.class)
	if m.wb != 0 {
		below := false
		for j := 0; j < k; j++ {
			below = below || m.classBusy(j)
		}
		if below {
			c := &m.class[k]
			c.a = sum(c.a, refSpan(cost, m.wa))
			c.lv = bigMax(c.lv, c.a)
		}
		for j := k + 1; j < 8; j++ {
			if m.classBusy(j) {
				u := &m.class[j]
				u.b = sum(u.b, refSpan(cost, m.wb))
				u.lv = bigMax(u.lv, u.b)
			}
		}
	}
	fl.start = sum(fl.start, refSpan(cost, fl.weight))
	m.class[k].v = bigMax(m.class[k].v, fl.start)
}

type refGrant struct {
	id int
	at int64
}

// grant is Fair.Grant with decide in place of an Owner.
func (m *refFair) grant(now int64, decide func(at, cost int64) (bool, int64)) (granted []refGrant, wake int64) {
	for m.head != nil {
		h := m.head
		at := m.due(now)
		if at > now {
			return granted, at
		}
		ok, retry := decide(at, h.cost)
		if !ok {
			if retry == 0 {
				return granted, 0
			}
			m.headRetry = max(retry, at+1)
			continue
		}
		m.last = at
		m.charge(h.flow, h.cost)
		h.flow.queue = h.flow.queue[1:]
		m.repick(at)
		m.headRetry = 0
		granted = append(granted, refGrant{h.id, at})
	}
	return granted, 0
}

func (m *refFair) setFloor(floor, at int64) {
	m.wa, m.wb = 1_000_000-floor, floor
	if floor == 0 {
		m.wa = 0
	}
	for k := range m.class {
		c := &m.class[k]
		c.a, c.b = new(big.Int).Set(c.lv), new(big.Int).Set(c.lv)
	}
	m.repick(at)
}
