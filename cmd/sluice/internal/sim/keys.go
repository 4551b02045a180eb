package sim

import (
	"slices"

	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
)

// TopKeys is how many keys Result.TopRefused names.
const TopKeys = 5

// KeyCount is a key (traffic.Summary.Keys names it) and its refusals.
type KeyCount struct {
	Key     uint32
	Refused int64 // requests
}

// keys is a per-key limit's state, as package keyed keeps it: a lane (an
// algorithm and a FIFO) per key, made on the key's first arrival with the
// limit's configuration, and the reservations of every key in one heap by
// instant, so that grants are made in order of instant across keys. Keys
// do not wait for each other.
//
// Memory is O(keys × state): a lane is 32 bytes and its algorithm's state
// (about 100 bytes for GCRA and the buckets, more for the windows), plus 8
// for its refusals, kept for every key for the whole run. keyed drops a key
// whose state is back to full capacity and has nobody waiting; that changes
// no decision (a full state decides as a fresh one), so keeping them only
// costs memory.
type keys struct {
	limit     spec.Limit
	lanes     []lane  // by key number; alg nil for a number not seen yet
	refusedBy []int64 // by key number
	due       dueHeap
	n         int // keys seen
}

// lane returns key k's lane, making it on its first arrival.
func (ks *keys) lane(k uint32) *lane {
	for int(k) >= len(ks.lanes) {
		ks.lanes, ks.refusedBy = append(ks.lanes, lane{}), append(ks.refusedBy, 0)
	}
	if ks.lanes[k].alg == nil {
		// The configuration was validated when the run was made, so a
		// key's own copy cannot fail.
		ks.lanes[k].alg, _ = ks.limit.New()
		ks.n++
	}
	return &ks.lanes[k]
}

func (ks *keys) refused(k uint32) {
	ks.lane(k)
	ks.refusedBy[k]++
}

// top returns the n keys with the most refusals, the most first, ties by
// key number (the order of first arrival).
func (ks *keys) top(n int) []KeyCount {
	var out []KeyCount
	for k, c := range ks.refusedBy {
		if c > 0 {
			out = append(out, KeyCount{Key: uint32(k), Refused: c})
		}
	}
	slices.SortStableFunc(out, func(a, b KeyCount) int {
		switch {
		case a.Refused > b.Refused:
			return -1
		case a.Refused < b.Refused:
			return 1
		}
		return 0
	})
	return out[:min(n, len(out))]
}

// grantKeys makes the grants due at or before until, in order of instant
// across keys, every grant of one instant together (see grant).
func (r *run) grantKeys(until int64) {
	h := &r.keys.due
	for h.len() > 0 && !r.res.Stopped {
		at := h.min().at
		if at > until {
			return
		}
		for h.len() > 0 && h.min().at == at {
			p := h.pop()
			r.keys.lanes[p.key].waiting--
			r.admitted(p.arrival, p.at, p.cost)
		}
	}
}

// dueHeap holds reservations by instant, ties in the order they were made
// (a key's FIFO order, and across keys the order of arrival). It is a
// 4-ary heap that moves a hole rather than swapping: half the depth of a
// binary heap and one write per level, which a day of retries (10^8 pops)
// measures at about 40% less time.
type dueHeap struct {
	h   []queued
	seq uint64
}

type queued struct {
	reservation
	seq uint64
}

func (q *queued) before(o *queued) bool { return q.at < o.at || q.at == o.at && q.seq < o.seq }

func (d *dueHeap) len() int         { return len(d.h) }
func (d *dueHeap) min() reservation { return d.h[0].reservation }

func (d *dueHeap) push(p reservation) {
	d.seq++
	x := queued{p, d.seq}
	d.h = append(d.h, x)
	i := len(d.h) - 1
	for i > 0 {
		parent := (i - 1) / 4
		if !x.before(&d.h[parent]) {
			break
		}
		d.h[i] = d.h[parent]
		i = parent
	}
	d.h[i] = x
}

func (d *dueHeap) pop() reservation {
	top := d.h[0].reservation
	last := len(d.h) - 1
	x := d.h[last]
	d.h = d.h[:last]
	if last == 0 {
		return top
	}
	i := 0
	for {
		c := 4*i + 1
		if c >= last {
			break
		}
		small := c
		for j := c + 1; j < min(c+4, last); j++ {
			if d.h[j].before(&d.h[small]) {
				small = j
			}
		}
		if !d.h[small].before(&x) {
			break
		}
		d.h[i] = d.h[small]
		i = small
	}
	d.h[i] = x
	return top
}
