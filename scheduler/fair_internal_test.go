package scheduler

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

func (a tag) big() *big.Int {
	x := new(big.Int).SetUint64(a.hi)
	x.Lsh(x, 64)
	return x.Or(x, new(big.Int).SetUint64(a.lo))
}

// span is cost·2^40/weight rounded down, over the whole range of costs and
// weights, and the 128-bit arithmetic agrees with big integers.
func TestTagArithmetic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		cost := rng.Int64N(math.MaxInt64) + 1
		if rng.IntN(2) == 0 {
			cost = rng.Int64N(1 << 30)
		}
		w := rng.Int64N(MaxWeight) + 1
		want := new(big.Int).Lsh(big.NewInt(cost), tagShift)
		want.Quo(want, big.NewInt(w))
		s := span(cost, w)
		if s.big().Cmp(want) != 0 {
			t.Fatalf("span(%d, %d) = %v, want %v", cost, w, s.big(), want)
		}
		u := span(rng.Int64N(math.MaxInt64), 1)
		sum := s.plus(u)
		if sum.big().Cmp(new(big.Int).Add(s.big(), u.big())) != 0 {
			t.Fatalf("%v + %v = %v", s.big(), u.big(), sum.big())
		}
		if sum.minus(u) != s || s.less(u) != (s.big().Cmp(u.big()) < 0) || maxTag(s, u) == minTag(s, u) && s != u {
			t.Fatalf("minus, less, max or min wrong for %v and %v", s.big(), u.big())
		}
	}
}

// rebaseOrder runs one script of busy flows on f and returns the grants'
// order; the flows never all empty, so the queue never restarts its tags.
func rebaseOrder(f *Fair[int], lift func(), grants int) []int {
	flows := make([]*Flow[int], 5)
	for i := range flows {
		flows[i] = new(Flow[int])
		flows[i].Init(int64(1+i), i%2)
	}
	o := &orderOwner{}
	rng := rand.New(rand.NewPCG(3, 4))
	for i, fl := range flows {
		f.Push(&Node[int]{Value: i, Cost: 1 + rng.Int64N(1<<40)}, fl)
	}
	lift()
	for len(o.order) < grants {
		for i, fl := range flows {
			for fl.Len() < 2 {
				f.Push(&Node[int]{Value: i, Cost: 1 + rng.Int64N(1<<40)}, fl)
			}
		}
		f.Grant(0, o)
	}
	return o.order
}

// orderOwner denies every third decision, waiting for an event.
type orderOwner struct {
	order []int
	asked int
}

func (o *orderOwner) Decide(int64, int64) (bool, int64) { o.asked++; return o.asked%3 != 0, 0 }
func (o *orderOwner) Granted(n *Node[int], _ int64)     { o.order = append(o.order, n.Value) }

// A class that never empties rebases its tags before they could wrap, and
// the order is the one it would have been with no rebasing: the same
// script from tags lifted just below the limit and from zero.
func TestRebaseKeepsTheOrder(t *testing.T) {
	for _, floor := range []int64{0, FloorScale / 4} {
		var low, high Fair[int]
		low.SetFloor(floor, 0)
		high.SetFloor(floor, 0)
		want := rebaseOrder(&low, func() {}, 3000)
		// Some 16 grants of 2^40 at weight 1 below the limit; the levels'
		// weights are near a million, their spans smaller.
		lifted, liftedLevel := tag{hi: rebaseAt - 1<<20}, tag{hi: rebaseAt - 1<<6}
		got := rebaseOrder(&high, func() {
			for k := range high.class {
				c := &high.class[k]
				for i := range c.flows {
					e := &c.flows[i]
					e.flow.start = e.flow.start.plus(lifted)
					e.key.finish = e.key.finish.plus(lifted)
				}
				c.v = c.v.plus(lifted)
				c.a, c.b, c.lv = c.a.plus(liftedLevel), c.b.plus(liftedLevel), c.lv.plus(liftedLevel)
			}
		}, 3000)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("floor %d: grant %d went to flow %d, want %d", floor, i, got[i], want[i])
			}
		}
		// Class 1 is served always, class 0 only with a floor (at class 1's
		// level).
		if c := &high.class[1]; c.v.hi >= lifted.hi || floor != 0 && c.lv.hi >= liftedLevel.hi {
			t.Fatalf("floor %d: class 1 not rebased: v %v, level %v", floor, c.v.big(), c.lv.big())
		}
		if c := &high.class[0]; floor != 0 && c.v.hi >= lifted.hi {
			t.Fatalf("floor %d: class 0 not rebased: v %v", floor, c.v.big())
		}
	}
}

// Once empty, a Fair queue gives back the heap a burst of busy flows grew,
// so that idle flows hold nothing in it.
func TestRestartGivesBackTheHeap(t *testing.T) {
	var f Fair[int]
	flows := make([]Flow[int], 1000)
	for i := range flows {
		flows[i].Init(1, 0)
		f.Push(&Node[int]{Value: i, Cost: 1}, &flows[i])
	}
	if cap(f.class[0].flows) < 1000 {
		t.Fatal("the heap did not grow")
	}
	for n, fl := f.Pop(); n != nil; n, fl = f.Pop() {
		if fl.pos != 0 {
			t.Fatal("an idle flow kept its place")
		}
	}
	if f.class[0].flows != nil || f.class[0].v != (tag{}) {
		t.Fatalf("after emptying: heap cap %d, v %v", cap(f.class[0].flows), f.class[0].v.big())
	}
}
