package scheduler_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler"
)

// units records what each flow was granted, in order.
type units struct {
	p     *gcraPacer
	order []string
	cost  map[string]int64
	at    []int64
	last  []int64 // the cost of each grant, in order
}

// newUnits paces a unit every `every` ns with bursts of up to burst units
// (a cost above burst is never admitted, as with a GCRA).
func newUnits(every, burst int64) *units {
	return &units{p: &gcraPacer{every: every, burst: burst}, cost: map[string]int64{}}
}

func (u *units) Decide(at, cost int64) (bool, int64) { return u.p.decide(at, cost) }
func (u *units) Granted(n *scheduler.Node[string], at int64) {
	u.order, u.at, u.last = append(u.order, n.Value), append(u.at, at), append(u.last, n.Cost)
	u.cost[n.Value] += n.Cost
}

func flow(weight int64, class int) *scheduler.Flow[string] {
	fl := new(scheduler.Flow[string])
	fl.Init(weight, class)
	return fl
}

func push(f *scheduler.Fair[string], fl *scheduler.Flow[string], name string, cost, arrival int64) *scheduler.Node[string] {
	n := &scheduler.Node[string]{Value: name, Cost: cost, Arrival: arrival}
	f.Push(n, fl)
	return n
}

// Two flows of equal weight and equal costs alternate; a flow of twice the
// weight gets two grants for one.
func TestFairAlternatesByWeight(t *testing.T) {
	var f scheduler.Fair[string]
	a, b, c := flow(1, 0), flow(1, 0), flow(2, 0)
	for range 4 {
		push(&f, a, "a", 1, 0)
		push(&f, b, "b", 1, 0)
	}
	u := newUnits(1, 1)
	f.Grant(100, u)
	assert.Equal(t, []string{"a", "b", "a", "b", "a", "b", "a", "b"}, u.order, "ties go to the head that arrived first, then the flow busy first")

	u = newUnits(1, 1)
	for range 4 {
		push(&f, a, "a", 1, 200)
		push(&f, c, "c", 1, 200)
	}
	f.Grant(300, u)
	// Finishes: a at 1, 2, 3, 4; c at 0.5, 1, 1.5, 2; ties to the flow
	// busy first.
	assert.Equal(t, []string{"c", "a", "c", "c", "a", "c", "a", "a"}, u.order)
}

// Weighted fair queueing is on cost: a flow of large costs gets no more
// units than its share, however few requests that makes.
func TestFairSharesAreInCostNotRequests(t *testing.T) {
	var f scheduler.Fair[string]
	small, large := flow(1, 0), flow(1, 0)
	u := newUnits(1, 10)
	now := int64(0)
	for range 2000 {
		for small.Len() < 2 {
			push(&f, small, "small", 1, now)
		}
		for large.Len() < 2 {
			push(&f, large, "large", 10, now)
		}
		now = f.Grant(now, u)
	}
	total := float64(u.cost["small"] + u.cost["large"])
	assert.InDelta(t, 0.5, float64(u.cost["small"])/total, 0.005, "units: %v", u.cost)
	assert.Greater(t, u.cost["small"], 10*u.cost["large"]/10, "ten times the requests of the large one")
}

// shareCase is a set of flows kept busy with costs drawn from each flow's
// own range.
type shareCase struct {
	weights  []int64
	min, max []int64 // cost range per flow
}

// TestFairShares is issue 14's ±1%: over 10,000 grants with 2, 3 and 10
// busy flows of mixed costs, each flow's share of the units granted is
// within 1% (relative) of its weight's share, and at every grant every
// pair of flows keeps the bound of self-clocked fair queueing.
func TestFairShares(t *testing.T) {
	cases := map[string]shareCase{
		"2 flows 1:3":      {weights: []int64{1, 3}, min: []int64{1, 5}, max: []int64{10, 5}},
		"3 flows 1:2:5":    {weights: []int64{1, 2, 5}, min: []int64{1, 1, 8}, max: []int64{1, 20, 8}},
		"10 flows 1 to 10": {weights: []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, min: []int64{1, 1, 1, 1, 1, 3, 3, 3, 3, 3}, max: []int64{1, 4, 8, 16, 2, 3, 6, 12, 24, 5}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			shares := fairShares(t, c, 10_000)
			var wsum int64
			for _, w := range c.weights {
				wsum += w
			}
			for i, w := range c.weights {
				want := float64(w) / float64(wsum)
				assert.InEpsilon(t, want, shares[i], 0.01, "flow %d (weight %d): share %.5f, want %.5f", i, w, shares[i], want)
				t.Logf("flow %d weight %d: share %.5f, want %.5f (%+.3f%%)", i, w, shares[i], want, 100*(shares[i]-want)/want)
			}
		})
	}
}

// fairShares runs c for grants grants, every flow always busy, checks the
// pairwise bound at every grant and returns each flow's share of the units.
func fairShares(t *testing.T, c shareCase, grants int) []float64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(len(c.weights)), 1))
	var f scheduler.Fair[string]
	flows := make([]*scheduler.Flow[string], len(c.weights))
	names := make([]string, len(c.weights))
	for i, w := range c.weights {
		flows[i], names[i] = flow(w, 0), fmt.Sprint(i)
	}
	u := newUnits(1, slices.Max(c.max))
	got := make([]int64, len(flows))
	now := int64(0)
	for len(u.order) < grants {
		for i, fl := range flows {
			for fl.Len() < 3 {
				push(&f, fl, names[i], c.min[i]+rng.Int64N(c.max[i]-c.min[i]+1), now)
			}
		}
		before := len(u.order)
		now = f.Grant(now, u)
		for _, name := range u.order[before:] {
			i := slices.Index(names, name)
			got[i] += u.last[len(u.last)-len(u.order)+before]
			before++
		}
		// Golestani's bound for every pair, all busy throughout.
		for i := range flows {
			for j := range flows {
				lhs := math.Abs(float64(got[i])/float64(c.weights[i]) - float64(got[j])/float64(c.weights[j]))
				if bound := float64(c.max[i])/float64(c.weights[i]) + float64(c.max[j])/float64(c.weights[j]); lhs > bound+1e-9 {
					t.Fatalf("after %d grants: flows %d and %d: |W/w difference| %.3f > %.3f", len(u.order), i, j, lhs, bound)
				}
			}
		}
	}
	var total int64
	for _, g := range got {
		total += g
	}
	shares := make([]float64, len(got))
	for i, g := range got {
		shares[i] = float64(g) / float64(total)
	}
	return shares
}

// A flow that goes idle banks nothing: when it comes back it gets its share
// from then on, not a catch-up; and its share goes to the busy flows at
// once.
func TestFairIdleFlowBanksNothing(t *testing.T) {
	var f scheduler.Fair[string]
	a, b, c := flow(1, 0), flow(1, 0), flow(2, 0)
	u := newUnits(1, 1)
	fill := func(now int64, flows ...*scheduler.Flow[string]) {
		for _, fl := range flows {
			for fl.Len() < 2 {
				push(&f, fl, map[*scheduler.Flow[string]]string{a: "a", b: "b", c: "c"}[fl], 1, now)
			}
		}
	}
	now := int64(0)
	step := func(n int, flows ...*scheduler.Flow[string]) map[string]int {
		u.order = u.order[:0]
		for len(u.order) < n {
			fill(now, flows...)
			f.Grant(now, u)
			now = u.p.tat
		}
		count := map[string]int{}
		for _, name := range u.order[:n] {
			count[name]++
		}
		return count
	}
	assert.Equal(t, map[string]int{"a": 100, "b": 100, "c": 200}, step(400, a, b, c))
	// c stops: its queued waiters leave (a cancellation) and a and b split
	// the rate from the next grant on.
	for c.Len() > 0 {
		f.Remove(c.Head(), c, 0)
	}
	assert.Equal(t, map[string]int{"a": 50, "b": 50}, step(100, a, b))
	// a alone for a long time: b and c bank nothing meanwhile.
	for b.Len() > 0 {
		f.Remove(b.Head(), b, 0)
	}
	step(1000, a)
	// Back together: the very next grants follow the weights, 1:1:2, with
	// no burst for the flows that were away.
	got := step(8, a, b, c)
	assert.Equal(t, map[string]int{"a": 2, "b": 2, "c": 4}, got)
}

// A newcomer in an idle flow is granted before the waiters of a busy flow
// that queued earlier: the fair order is not arrival order.
func TestFairNewcomerGoesBeforeEarlierWaiters(t *testing.T) {
	var f scheduler.Fair[string]
	batch, interactive := flow(1, 0), flow(1, 0)
	for range 100 {
		push(&f, batch, "batch", 1, 0)
	}
	u := newUnits(10, 1)
	assert.Equal(t, int64(100), f.Grant(95, u), "batch granted at 0..90, next due at 100")
	push(&f, interactive, "interactive", 1, 97)
	f.Grant(110, u)
	// Its finish ties with the batch head's (both one unit past the
	// class's virtual time); the tie goes to the earlier arrival.
	assert.Equal(t, []string{"batch", "interactive"}, u.order[10:], "granted at 110, before 89 batch waiters queued at 0")
	assert.Equal(t, int64(110), u.at[len(u.at)-1])
}

// drain grants until f is empty, waking when Grant says, from now.
func drain(f *scheduler.Fair[string], u *units, now int64) {
	for f.Len() > 0 {
		if now = f.Grant(now, u); now == 0 {
			return
		}
	}
}

// Inside a flow the order is FIFO, and a waiter removed from the middle
// leaves no gap: the waiters behind it are granted as if it never queued.
func TestFairFIFOInsideAFlowAndRemoval(t *testing.T) {
	var f scheduler.Fair[string]
	a, b := flow(1, 0), flow(1, 0)
	var an []*scheduler.Node[string]
	for i := range 4 {
		an = append(an, push(&f, a, fmt.Sprint("a", i), 1, 0))
		push(&f, b, fmt.Sprint("b", i), 1, 0)
	}
	require.True(t, f.Remove(an[1], a, 0))
	assert.False(t, f.Remove(an[1], a, 0), "second removal")
	require.True(t, f.Remove(an[0], a, 0), "the head")
	u := newUnits(1, 1)
	drain(&f, u, 0)
	assert.Equal(t, []string{"a2", "b0", "a3", "b1", "b2", "b3"}, u.order)
	assert.Equal(t, 0, f.Len())
	h, hf := f.Head()
	assert.Nil(t, h)
	assert.Nil(t, hf)
}

// Grant stamps the scheduled instants, as a Queue does: a late wake-up
// loses no rate, a head is not due before its arrival, and a head promoted
// by a removal is scheduled from then.
func TestFairScheduledInstants(t *testing.T) {
	var f scheduler.Fair[string]
	a, b := flow(1, 0), flow(1, 0)
	push(&f, a, "a0", 1, 0)
	push(&f, b, "b0", 1, 0)
	push(&f, a, "a1", 1, 0)
	u := newUnits(100, 1)
	assert.Equal(t, int64(0), f.Grant(250, u), "woken late at 250: all three granted, at their own instants")
	assert.Equal(t, []int64{0, 100, 200}, u.at)
	late := push(&f, b, "late", 1, 1000)
	assert.Equal(t, int64(1000), f.Due(500), "not due before its arrival")
	f.Remove(late, b, 500)
	assert.Equal(t, int64(0), f.Grant(2000, u))

	// A large head blocks the small waiter behind it in its flow; when it
	// leaves, at 4000, the small one is scheduled from then, not from its
	// arrival at 3000 (which would grant in the past).
	u.p.burst = 50
	big := push(&f, a, "big", 50, 3000)
	push(&f, a, "small", 1, 3000)
	u.p.tat = 9000
	assert.Equal(t, int64(9000), f.Grant(3000, u))
	require.True(t, f.Remove(big, a, 4000))
	u.p.tat = 0
	f.Grant(4000, u)
	assert.Equal(t, "small", u.order[len(u.order)-1])
	assert.Equal(t, int64(4000), u.at[len(u.at)-1])
}

// Strict priority: a class is served only while every class above it is
// empty, whatever the weights.
func TestFairStrictPriority(t *testing.T) {
	var f scheduler.Fair[string]
	batch, normal, urgent := flow(scheduler.MaxWeight, 0), flow(1, 1), flow(1, 2)
	for range 3 {
		push(&f, batch, "batch", 1, 0)
		push(&f, normal, "normal", 1, 0)
	}
	u := newUnits(1, 1)
	assert.Equal(t, int64(1), f.Grant(0, u))
	assert.Equal(t, []string{"normal"}, u.order)
	push(&f, urgent, "urgent", 1, 1)
	push(&f, urgent, "urgent", 1, 1)
	f.Grant(100, u)
	assert.Equal(t, []string{"normal", "urgent", "urgent", "normal", "normal", "batch", "batch", "batch"}, u.order)
}

// With a floor the classes below a busy class keep their share: a tenth
// with two classes; 90/9/1 with three; the floor's share at once for the
// lowest when the middle one is idle. And the lowest class waits at most a
// bounded number of units between two of its grants.
func TestFairFloorShares(t *testing.T) {
	cases := []struct {
		name    string
		classes []int
		want    []float64
	}{
		{"two classes", []int{2, 0}, []float64{0.9, 0.1}},
		{"three classes", []int{2, 1, 0}, []float64{0.9, 0.09, 0.01}},
		{"the middle one idle", []int{7, 0}, []float64{0.9, 0.1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var f scheduler.Fair[string]
			f.SetFloor(scheduler.FloorScale/10, 0)
			require.Equal(t, int64(scheduler.FloorScale/10), f.Floor())
			idle := flow(1, 3) // a class that never has waiters changes nothing
			_ = idle
			flows := make([]*scheduler.Flow[string], len(c.classes))
			for i, k := range c.classes {
				flows[i] = flow(1+int64(i), k) // weights matter only inside a class
			}
			u := newUnits(1, 5)
			rng := rand.New(rand.NewPCG(7, 7))
			got := make([]int64, len(flows))
			var total int64
			lowest := fmt.Sprint(len(flows) - 1)
			sinceLowest, worst := int64(0), int64(0)
			now := int64(0)
			for len(u.order) < 100_000 {
				for i, fl := range flows {
					for fl.Len() < 2 {
						push(&f, fl, fmt.Sprint(i), 1+rng.Int64N(5), now)
					}
				}
				before := len(u.order)
				now = f.Grant(now, u)
				for k := before; k < len(u.order); k++ {
					i, _ := strconv.Atoi(u.order[k])
					got[i] += u.last[k]
					total += u.last[k]
					if u.order[k] == lowest {
						sinceLowest = 0
					} else {
						sinceLowest += u.last[k]
						worst = max(worst, sinceLowest)
					}
				}
			}
			for i := range flows {
				share := float64(got[i]) / float64(total)
				assert.InEpsilon(t, c.want[i], share, 0.01, "class %d: share %.4f", c.classes[i], share)
			}
			// SCFQ at each level: between two grants of the classes below,
			// the class above gets at most cmax·(1-f)/f + cmax units.
			if len(flows) == 2 {
				assert.LessOrEqual(t, worst, int64(5*9+5), "units granted above between two grants of the lowest class")
			}
			t.Logf("shares %v of %d units; longest run without the lowest class: %d units", got, total, worst)
		})
	}
}

// Issue 14: a floor means the lowest class never starves for good, while
// strict priority (no floor) starves it for as long as a class above is
// busy.
func TestFairStarvationBound(t *testing.T) {
	for _, floor := range []int64{0, scheduler.FloorScale / 100, scheduler.FloorScale / 10, scheduler.FloorScale / 2} {
		var f scheduler.Fair[string]
		f.SetFloor(floor, 0)
		hi, lo := flow(1, 1), flow(1, 0)
		u := newUnits(1, 3)
		push(&f, lo, "lo", 3, 0)
		now := int64(0)
		for range 10_000 {
			for hi.Len() < 2 {
				push(&f, hi, "hi", 3, now)
			}
			now = f.Grant(now, u)
			if lo.Len() == 0 {
				break
			}
		}
		if floor == 0 {
			assert.Equal(t, 1, lo.Len(), "strict: the low class waits while the high one is busy")
			continue
		}
		// The low waiter's turn at its level: after at most
		// ceil(cost·wa/wb) + 1 grants of the class above.
		wa, wb := scheduler.FloorScale-floor, floor
		bound := (3*wa+wb-1)/wb/3 + 1
		assert.Zero(t, lo.Len(), "floor %d: the low class was granted", floor)
		assert.LessOrEqual(t, int64(len(u.order)-1), bound, "floor %d: grants above before the low waiter", floor)
	}
}

// A class that comes back at its level banks nothing either: once the
// classes below a busy class were away, the two start level when they
// return.
func TestFairLevelStartsAfresh(t *testing.T) {
	var f scheduler.Fair[string]
	f.SetFloor(scheduler.FloorScale/2, 0) // equal shares between the levels
	hi, lo := flow(1, 1), flow(1, 0)
	push(&f, hi, "h1", 1, 0)
	push(&f, hi, "h2", 1, 0)
	l1 := push(&f, lo, "l1", 1, 0)
	u := newUnits(1, 1)
	f.Grant(0, u)
	assert.Equal(t, []string{"h1"}, u.order, "a tie goes to the class above")
	f.Remove(l1, lo, 0) // the class below leaves after the class above was served
	push(&f, lo, "l2", 1, 0)
	h, _ := f.Head()
	assert.Equal(t, "h2", h.Value, "l2 starts level with h2: nothing of l1's turn is kept")
}

// A class's virtual time never goes back, even when a flow whose head left
// is granted a finish below it: a newcomer never starts before a finish
// already granted.
func TestFairVirtualTimeNeverGoesBack(t *testing.T) {
	var f scheduler.Fair[string]
	a, b, c := flow(1, 0), flow(1, 0), flow(1, 0)
	big := push(&f, a, "a-big", 10, 0) // never admitted at a burst of 1: it blocks
	push(&f, a, "a-small", 1, 0)
	u := newUnits(1, 1)
	now := int64(0)
	for range 8 { // b is granted finishes 1 to 8
		push(&f, b, "b", 1, now)
		now = f.Grant(now, u)
	}
	require.Equal(t, 8, len(u.order))
	push(&f, b, "b", 1, now)
	push(&f, b, "b", 1, now)
	f.Remove(big, a, now) // a's next head finishes at 1, below the class's time
	now = f.Grant(now, u)
	require.Equal(t, "a-small", u.order[len(u.order)-1])
	push(&f, c, "c", 1, now)
	h, _ := f.Head()
	assert.Equal(t, "b", h.Value, "c starts at the class's time (8), level with b's head (9), not at 1")
}

// The same at a level: its virtual time never goes back either.
func TestFairLevelTimeNeverGoesBack(t *testing.T) {
	var f scheduler.Fair[string]
	f.SetFloor(scheduler.FloorScale/2, 0) // spans of 2 per unit at the level
	hi, lo := flow(1, 1), flow(1, 0)
	big := push(&f, lo, "l-big", 10, 0) // never admitted at a burst of 1: it blocks
	push(&f, lo, "l-small", 1, 0)
	for range 12 {
		push(&f, hi, "h", 1, 0)
	}
	u := newUnits(1, 1)
	now := int64(0)
	for range 11 { // h at level finishes 2..20, then l-big (20) is due and blocks
		now = f.Grant(now, u)
	}
	require.Equal(t, 10, len(u.order))
	f.Remove(big, lo, now)
	now = f.Grant(now, u)
	require.Equal(t, "l-small", u.order[len(u.order)-1], "granted at level finish 2, below the level's time 20")
	// The class below is away and comes back: it starts at the level's
	// time (20), level with the class above, not at 2.
	push(&f, lo, "l-new", 1, now)
	h, _ := f.Head()
	assert.Equal(t, "h", h.Value)
}

// Adopt moves a FIFO's waiters into a flow with what the queue knew.
func TestFairAdopt(t *testing.T) {
	var q scheduler.Queue[string]
	for _, n := range nodes("a", "b", "c") {
		q.Push(n)
	}
	p := &pacer{every: 100}
	assert.Equal(t, int64(100), q.Grant(50, p))
	q.Hold(150)
	var f scheduler.Fair[string]
	fl := flow(1, 0)
	f.Adopt(&q, fl)
	assert.Equal(t, 0, q.Len())
	assert.Equal(t, 2, fl.Len())
	assert.Equal(t, int64(0), f.Last())
	assert.Equal(t, int64(150), f.Held())
	assert.Equal(t, int64(150), f.Due(60))
	u := newUnits(100, 1)
	u.p.tat = 100
	f.Grant(1000, u)
	assert.Equal(t, []string{"b", "c"}, u.order)
	assert.Equal(t, []int64{150, 250}, u.at)
	assert.Panics(t, func() {
		push(&f, fl, "x", 1, 0)
		f.Adopt(&q, fl)
	})
}

func TestFairMisuse(t *testing.T) {
	var f scheduler.Fair[string]
	assert.Panics(t, func() { f.Push(&scheduler.Node[string]{Cost: 1}, new(scheduler.Flow[string])) }, "a flow not initialised")
	fl := flow(1, 0)
	n := push(&f, fl, "a", 1, 0)
	assert.Panics(t, func() { f.Push(n, fl) }, "pushed twice")
	assert.Panics(t, func() { fl.Init(2, 0) }, "Init with waiters")
	for _, bad := range [][2]int64{{0, 0}, {scheduler.MaxWeight + 1, 0}, {1, -1}, {1, scheduler.Classes}} {
		assert.Panics(t, func() { new(scheduler.Flow[string]).Init(bad[0], int(bad[1])) }, "Init(%d, %d)", bad[0], bad[1])
	}
	assert.Panics(t, func() { f.SetFloor(-1, 0) })
	assert.Panics(t, func() { f.SetFloor(scheduler.FloorScale/2+1, 0) })
	assert.Equal(t, int64(1), fl.Weight())
	assert.Equal(t, 0, fl.Class())
}

// Pop and All see every waiter, as Close and a smaller burst need.
func TestFairPopAndAll(t *testing.T) {
	var f scheduler.Fair[string]
	a, b := flow(1, 0), flow(1, 3)
	push(&f, a, "a0", 1, 0)
	push(&f, a, "a1", 1, 0)
	push(&f, b, "b0", 1, 0)
	seen := map[string]*scheduler.Flow[string]{}
	for n, fl := range f.All() {
		seen[n.Value] = fl
	}
	assert.Equal(t, map[string]*scheduler.Flow[string]{"a0": a, "a1": a, "b0": b}, seen)
	for range f.All() {
		break // an early stop is honoured
	}
	var popped []string
	for n, _ := f.Pop(); n != nil; n, _ = f.Pop() {
		popped = append(popped, n.Value)
	}
	assert.Equal(t, []string{"b0", "a0", "a1"}, popped, "the fair order: the higher class first")
}
