package scheduler

import "fmt"

// Classes is how many priority classes a Fair queue has: 0, the lowest and
// the default, to Classes-1, the highest.
const Classes = 8

// MaxWeight is the largest weight of a Flow. It bounds the precision the
// virtual times need (see tag).
const MaxWeight = 1 << 20

// Flow is one lane of a Fair queue: a weight, a priority class and a FIFO of
// waiters. The owner keeps it (typically inside its own per-lane handle)
// and passes it with every node it pushes or removes. An idle flow (no
// waiters) is in no structure of the queue and holds no memory beyond its
// own fields: the queue forgets it until its next waiter.
//
// Its zero value is not ready: call Init first. Like the queue it belongs
// to, a Flow is touched by its owner's goroutine only.
type Flow[T any] struct {
	// start is the virtual finish of the flow's last grant, or the class's
	// virtual time when it last became busy: its head's tag is start plus
	// the head's cost over the weight.
	start      tag
	seq        uint64 // when it last became busy: ties go to the earlier
	head, tail *Node[T]
	weight     int64
	n          int32
	pos        int32 // 1 + its index in its class's heap; 0 while idle
	class      uint8
}

// Init sets the flow's weight and priority class. It panics for a weight
// outside [1, MaxWeight], a class outside [0, Classes) or a flow with
// waiters: the owner validates what its users ask for, so these are bugs in
// the owner, not conditions of input.
func (fl *Flow[T]) Init(weight int64, class int) {
	if weight < 1 || weight > MaxWeight || class < 0 || class >= Classes {
		panic(fmt.Sprintf("scheduler: Flow.Init(%d, %d) out of range", weight, class))
	}
	if fl.n != 0 {
		panic("scheduler: Flow.Init on a flow with waiters")
	}
	fl.weight, fl.class = weight, uint8(class)
}

// Len returns the number of waiters in the flow.
func (fl *Flow[T]) Len() int { return int(fl.n) }

// Head returns the flow's first waiter, or nil. Node.Next walks the rest in
// order.
func (fl *Flow[T]) Head() *Node[T] { return fl.head }

// Weight returns the flow's weight.
func (fl *Flow[T]) Weight() int64 { return fl.weight }

// Class returns the flow's priority class.
func (fl *Flow[T]) Class() int { return int(fl.class) }

// Contains reports whether n is in fl.
func (fl *Flow[T]) Contains(n *Node[T]) bool { return n.prev != nil || fl.head == n }

func (fl *Flow[T]) link(n *Node[T]) {
	n.prev, n.next = fl.tail, nil
	if fl.tail == nil {
		fl.head = n
	} else {
		fl.tail.next = n
	}
	fl.tail = n
	fl.n++
}

func (fl *Flow[T]) unlink(n *Node[T]) {
	if n.prev == nil {
		fl.head = n.next
	} else {
		n.prev.next = n.next
	}
	if n.next == nil {
		fl.tail = n.prev
	} else {
		n.next.prev = n.prev
	}
	n.prev, n.next = nil, nil
	fl.n--
}

// key is the flow's place in its class: its head's virtual finish, then
// the head's arrival, then when the flow became busy.
func (fl *Flow[T]) key() fairKey {
	return fairKey{fl.start.plus(span(fl.head.Cost, fl.weight)), fl.head.Arrival, fl.seq}
}

type fairKey struct {
	finish  tag
	arrival int64
	seq     uint64
}

func (a fairKey) less(b fairKey) bool { return a.below(b) != 0 }

// below is 1 if a comes before b and 0 otherwise; different finishes, the
// common case, are told apart without a branch on their order.
func (a fairKey) below(b fairKey) uint64 {
	if a.finish != b.finish {
		return a.finish.below(b.finish)
	}
	if a.arrival != b.arrival {
		return b2u(a.arrival < b.arrival)
	}
	return b2u(a.seq < b.seq)
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// flowHeap is a class's busy flows, least key first. The keys sit in the
// array so that a sift compares without following pointers.
type flowHeap[T any] []heapEntry[T]

type heapEntry[T any] struct {
	key  fairKey
	flow *Flow[T]
}

func (h *flowHeap[T]) push(fl *Flow[T]) {
	*h = append(*h, heapEntry[T]{fl.key(), fl})
	fl.pos = int32(len(*h))
	h.up(len(*h) - 1)
}

// fix restores the order after fl's key changed.
func (h flowHeap[T]) fix(fl *Flow[T]) {
	i := int(fl.pos) - 1
	h[i].key = fl.key()
	if !h.up(i) {
		h.down(i)
	}
}

func (h *flowHeap[T]) remove(fl *Flow[T]) {
	i, last := int(fl.pos)-1, len(*h)-1
	old := *h
	if i != last {
		old.swap(i, last)
	}
	old[last] = heapEntry[T]{}
	*h = old[:last]
	fl.pos = 0
	if i != last {
		if !h.up(i) {
			h.down(i)
		}
	}
}

func (h flowHeap[T]) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].flow.pos, h[j].flow.pos = int32(i+1), int32(j+1)
}

// up moves entry i towards the root and reports whether it moved. Entries
// move into the hole it leaves, so each level writes one flow's position.
func (h flowHeap[T]) up(i int) bool {
	x, start := h[i], i
	for i > 0 {
		p := (i - 1) / 2
		if !x.key.less(h[p].key) {
			break
		}
		h[i] = h[p]
		h[i].flow.pos = int32(i + 1)
		i = p
	}
	h[i] = x
	x.flow.pos = int32(i + 1)
	return i != start
}

// down moves entry i towards the leaves. A grant's flow gets a later
// finish than nearly every other, so it belongs near the bottom: the hole
// goes down to a leaf by the smaller child, one comparison a level, and
// the entry comes back up from there, rarely by more than a level (Floyd's
// bottom-up sift; a plain sift compares twice a level, BenchmarkGrant).
func (h flowHeap[T]) down(i int) {
	x, start := h[i], i
	for {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		m := l
		if r := l + 1; r < len(h) {
			m += int(h[r].key.below(h[l].key))
		}
		h[i] = h[m]
		h[i].flow.pos = int32(i + 1)
		i = m
	}
	// up's loop, written again: as a shared function taking the entry, it
	// cost 13ns a grant at one lane and 8ns at 1,000 (BenchmarkGrant).
	for i > start {
		p := (i - 1) / 2
		if !x.key.less(h[p].key) {
			break
		}
		h[i] = h[p]
		h[i].flow.pos = int32(i + 1)
		i = p
	}
	h[i] = x
	x.flow.pos = int32(i + 1)
}
