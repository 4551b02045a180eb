package scheduler_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/scheduler"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pacer admits one unit per `every` ns, strictly paced, like GCRA burst 1.
type pacer struct {
	every   int64
	next    int64
	granted []int64
	order   []string
	asked   []int64
}

func (p *pacer) Decide(at, cost int64) (bool, int64) {
	p.asked = append(p.asked, at)
	if at < p.next {
		return false, p.next
	}
	p.next = at + cost*p.every
	return true, 0
}

func (p *pacer) Granted(n *scheduler.Node[string], at int64) {
	p.order = append(p.order, n.Value)
	p.granted = append(p.granted, at)
}

func nodes(names ...string) []*scheduler.Node[string] {
	ns := make([]*scheduler.Node[string], len(names))
	for i, name := range names {
		ns[i] = &scheduler.Node[string]{Value: name, Cost: 1}
	}
	return ns
}

func TestGrantStampsScheduledInstants(t *testing.T) {
	var q scheduler.Queue[string]
	p := &pacer{every: 100}
	for _, n := range nodes("a", "b", "c", "d") {
		q.Push(n)
	}
	// Woken late at 250: a (0), b (100) and c (200) are due and stamped with
	// their scheduled instants, not 250; d is due at 300.
	wake := q.Grant(250, p)
	assert.Equal(t, []string{"a", "b", "c"}, p.order)
	assert.Equal(t, []int64{0, 100, 200}, p.granted)
	assert.Equal(t, int64(300), wake)
	assert.Equal(t, 1, q.Len())
	assert.Equal(t, int64(0), q.Grant(300, p))
	assert.Equal(t, []int64{0, 100, 200, 300}, p.granted)
	assert.Equal(t, 0, q.Len())
}

func TestArrivalBoundsTheScheduledInstant(t *testing.T) {
	var q scheduler.Queue[string]
	p := &pacer{every: 100}
	n := nodes("late")[0]
	n.Arrival = 1000 // idle until then: no banking of the idle time
	q.Push(n)
	assert.Equal(t, int64(1000), q.Grant(500, p), "not due before its arrival")
	q.Grant(1000, p)
	assert.Equal(t, []int64{1000}, p.granted)
}

func TestFIFOHeadBlocksSmallerRequests(t *testing.T) {
	var q scheduler.Queue[string]
	p := &pacer{every: 100, next: 0}
	big, small := nodes("big", "small")[0], nodes("small")[0]
	big.Cost = 5
	q.Push(big)
	q.Push(small)
	p.next = 50 // busy until 50
	assert.Equal(t, int64(50), q.Grant(0, p))
	assert.Empty(t, p.order, "small must not pass big")
	q.Grant(50, p)
	assert.Equal(t, []string{"big"}, p.order)
	assert.Equal(t, int64(550), q.Grant(50, p))
}

func TestRemoveAnywhereIsO1AndKeepsOrder(t *testing.T) {
	for _, victim := range []int{1, 2, 4} {
		var q scheduler.Queue[string]
		ns := nodes("a", "b", "c", "d", "e")
		for _, n := range ns {
			q.Push(n)
		}
		require.True(t, q.Remove(ns[victim], 0))
		assert.False(t, q.Remove(ns[victim], 0), "second remove")
		assert.False(t, q.Contains(ns[victim]))
		assert.Equal(t, 4, q.Len())
		p := &pacer{every: 100}
		q.Grant(1000, p)
		var want []string
		for i, n := range ns {
			if i != victim {
				want = append(want, n.Value)
			}
		}
		assert.Equal(t, want, p.order)
		// The removed waiter's slot went to the next: no gap.
		assert.Equal(t, []int64{0, 100, 200, 300}, p.granted)
	}
}

func TestHeadPromotedByRemovalIsScheduledFromThen(t *testing.T) {
	// A large head blocks small waiters; when it leaves at 1000 they are
	// granted from 1000 on, paced, not all at once for instants already past
	// (which would be a burst the owner never allowed).
	var q scheduler.Queue[string]
	p := &pacer{every: 100, next: 5000}
	ns := nodes("big", "a", "b", "c")
	ns[0].Cost = 50
	for _, n := range ns {
		q.Push(n)
	}
	assert.Equal(t, int64(5000), q.Grant(0, p))
	require.True(t, q.Remove(ns[0], 1000))
	p.next = 0 // the capacity it would have taken is back
	assert.Equal(t, int64(1100), q.Grant(1000, p))
	assert.Equal(t, []int64{1000}, p.granted)
	q.Grant(1200, p)
	assert.Equal(t, []int64{1000, 1100, 1200}, p.granted)
}

func TestRemovingTheHeadForgetsItsRetry(t *testing.T) {
	var q scheduler.Queue[string]
	p := &pacer{every: 100, next: 500}
	ns := nodes("a", "b")
	ns[0].Cost = 3
	q.Push(ns[0])
	q.Push(ns[1])
	assert.Equal(t, int64(500), q.Grant(0, p))
	q.Remove(ns[0], 0)
	p.next = 0 // capacity is back
	q.Grant(0, p)
	assert.Equal(t, []string{"b"}, p.order, "b is asked at once, not at a's retry instant")
}

type eventOwner struct{ free int64 }

func (o *eventOwner) Decide(_, cost int64) (bool, int64) {
	if cost <= o.free {
		o.free -= cost
		return true, 0
	}
	return false, 0
}
func (o *eventOwner) Granted(*scheduler.Node[string], int64) {}

func TestEventDrivenOwner(t *testing.T) {
	var q scheduler.Queue[string]
	o := &eventOwner{free: 1}
	ns := nodes("a", "b")
	ns[0].Cost = 2
	q.Push(ns[0])
	q.Push(ns[1])
	assert.Equal(t, int64(0), q.Grant(10, o), "waits for an event, no timer")
	assert.Equal(t, 2, q.Len())
	o.free = 3
	q.Grant(10, o)
	assert.Equal(t, 0, q.Len())
}

func TestPredictMatchesGrant(t *testing.T) {
	p := &pacer{every: 100, next: 250}
	at, ok := scheduler.Predict(0, 10, 1, p.Decide)
	require.True(t, ok)
	assert.Equal(t, int64(250), at)
	assert.Equal(t, int64(350), p.next, "the capacity is taken in the copy")

	never := func(int64, int64) (bool, int64) { return false, 0 }
	_, ok = scheduler.Predict(0, 0, 1, never)
	assert.False(t, ok)
}

func TestPushTwicePanics(t *testing.T) {
	var q scheduler.Queue[string]
	n := nodes("a")[0]
	q.Push(n)
	assert.Panics(t, func() { q.Push(n) })
}

func TestOwnerThatNeverAdvancesCannotHang(t *testing.T) {
	var q scheduler.Queue[string]
	n := nodes("a")[0]
	n.Arrival = 5
	q.Push(n)
	stuck := &stuckOwner{}
	assert.Equal(t, int64(11), q.Grant(10, stuck), "a retry at or before the instant asked moves on by 1ns")
}

type stuckOwner struct{}

func (stuckOwner) Decide(at, _ int64) (bool, int64)       { return false, at }
func (stuckOwner) Granted(*scheduler.Node[string], int64) {}

// Hold grants nothing before its instant, keeps the order, and only ever
// extends.
func TestHold(t *testing.T) {
	var q scheduler.Queue[int]
	o := &everyOwner{}
	for i := range 3 {
		q.Push(&scheduler.Node[int]{Value: i, Cost: 1, Arrival: 0})
	}
	q.Hold(100)
	q.Hold(50) // earlier: does not shorten
	if wake := q.Grant(10, o); wake != 100 || len(o.granted) != 0 {
		t.Fatalf("Grant(10) under a hold until 100: wake %d, granted %v", wake, o.granted)
	}
	if q.Due(10) != 100 || q.Held() != 100 {
		t.Fatalf("Due(10) = %d, Held() = %d; want 100", q.Due(10), q.Held())
	}
	q.Grant(100, o)
	if len(o.granted) != 3 || o.granted[0] != 0 || o.granted[2] != 2 || o.at[0] != 100 {
		t.Fatalf("after the hold: granted %v at %v, want 0, 1, 2 from 100", o.granted, o.at)
	}
}

// everyOwner allows everything and records the grants.
type everyOwner struct {
	granted []int
	at      []int64
}

func (o *everyOwner) Decide(int64, int64) (bool, int64) { return true, 0 }
func (o *everyOwner) Granted(n *scheduler.Node[int], at int64) {
	o.granted, o.at = append(o.granted, n.Value), append(o.at, at)
}

// TestAPromotedHeadIsDueFromItsRemovalNotFromALaterReading: a head made
// head by a removal at 1000 is due from 1000 whenever the owner next
// looks (here at 1300), and HeadFloor, a plain getter, says so at once;
// it used to fix the instant at the owner's next reading, 1300, so the
// waiters behind lost the 300 ns the owner was late by.
func TestAPromotedHeadIsDueFromItsRemovalNotFromALaterReading(t *testing.T) {
	var q scheduler.Queue[string]
	p := &pacer{every: 100, next: 5000}
	ns := nodes("big", "a", "b", "c")
	ns[0].Cost = 50
	for _, n := range ns {
		q.Push(n)
	}
	assert.Equal(t, int64(5000), q.Grant(0, p))
	require.True(t, q.Remove(ns[0], 1000))
	assert.Equal(t, int64(1000), q.HeadFloor(1300))
	assert.Equal(t, int64(1000), q.HeadFloor(1200), "a getter: asking at 1300 fixed nothing")
	p.next = 0
	q.Grant(1300, p)
	assert.Equal(t, []int64{1000, 1100, 1200}, p.granted)
}

// The same for the fair order's head.
func TestAFairHeadPromotedByARemovalIsDueFromTheRemoval(t *testing.T) {
	var f scheduler.Fair[string]
	var a scheduler.Flow[string]
	a.Init(1, 0)
	big := &scheduler.Node[string]{Value: "big", Cost: 50}
	f.Push(big, &a)
	f.Push(&scheduler.Node[string]{Value: "small", Cost: 1}, &a)
	require.True(t, f.Remove(big, &a, 1000))
	assert.Equal(t, int64(1000), f.HeadFloor(1300))
	assert.Equal(t, int64(1000), f.Due(1300))
}
