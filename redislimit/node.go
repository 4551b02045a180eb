package redislimit

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// node is one Redis server that the engine's calls go to, with its own
// batch in flight and its own health: a Cluster master, or the whole of
// any other client. One hung master then holds up and fails only the
// keys whose slots it serves; a batch spanning every node would wait for
// the slowest, and one health for the whole client would fail them all.
type node struct {
	addr     string // "" for the one node of a plain client, or a slot not yet routed
	busy     *batch // the batch under way to this node, or nil
	next     *batch // the batch dispatch is building for it
	out      outage // out of reach, for the log lines (log.go)
	downTill int64  // until then, its requests fail without a call
	downErr  error  // why
	// inCall counts this node's calls inside go-redis: one outside busy
	// (it outlived its timeout) stops the node's calls (reachable).
	inCall atomic.Int32
}

// reachable reports whether a call may be made to n now: not within the
// probe interval after a call to it failed for want of Redis, nor while a
// call to it that timed out is still inside go-redis (the holder of the
// state has no call of its own to n under way when it asks). On a hung
// server every further call would wait behind that one, each holding a
// goroutine and a connection for as long as the hang lasts; once it
// returns, the next batch tries again.
func (n *node) reachable(e *engine, now int64) bool {
	if now < n.downTill || n.inCall.Load() > 0 {
		if n.downErr == nil {
			n.downErr = &TimeoutError{After: e.cfg.callTimeout}
		}
		return false
	}
	return true
}

// router maps a Cluster's keys to the masters that serve their slots, as
// the ClusterClient knows them: go-redis follows MOVED and ASK itself and
// reloads its map of the slots then, so asking it keeps the grouping
// right through a resharding. The owner's cache, by slot, is dropped when
// a call fails or comes back MOVED or ASK, and every routeTTL.
type router struct {
	c     *redis.ClusterClient
	ready atomic.Bool // the client has loaded its map of the slots (warm)
	// warming says a warm is under way; warmed is when the owner last
	// started one, so that a failed load is tried again, once a routeTTL.
	warming atomic.Bool
	warmed  int64
	bySlot  map[uint16]*node // the owner's cache
	nodes   map[string]*node // by address: a node's state outlives the cache
	since   int64            // when the cache was last dropped
}

// routeTTL is how long the owner trusts its cache of slots: a slot moved
// meanwhile only groups a key with its old master's batch (go-redis sends
// its call to the new one all the same), so this bounds how long a hang of
// the old master can still fail it.
const routeTTL = int64(1e9)

// newRouter returns the router of a ClusterClient, nil for any other.
func newRouter(client redis.UniversalClient) *router {
	c, ok := client.(*redis.ClusterClient)
	if !ok {
		return nil
	}
	return &router{c: c, bySlot: make(map[uint16]*node), nodes: make(map[string]*node)}
}

// warm has the client load its map of the slots, on a goroutine of the
// pool: its first lookup blocks until one node answers CLUSTER SLOTS, and
// the owner must never wait for a node. Until then every key goes to one
// node, as with a plain client.
//
// A load that fails (the Cluster unreachable, restarting or slow when the
// limiter is made) is tried again by nodeOf, once a routeTTL: go-redis
// keeps no failed load, and without a retry every key would stay on one
// node for the limiter's life.
func (e *engine) warm(now int64) {
	rt := e.router
	rt.warmed = now
	rt.warming.Store(true)
	e.workers.spawn(e.labels, func() {
		defer rt.warming.Store(false)
		ctx, cancel := context.WithTimeout(e.ioCtx, e.cfg.callTimeout)
		defer cancel()
		if _, err := rt.c.MasterForKey(ctx, ""); err == nil {
			rt.ready.Store(true)
		}
	})
}

// nodeOf returns the node that serves ks's slot. Owner (or the holder of
// the state) only.
func (e *engine) nodeOf(ks *keyState, now int64) *node {
	rt := e.router
	if rt == nil {
		return e.node0
	}
	if !rt.ready.Load() {
		if !rt.warming.Load() && now-rt.warmed >= routeTTL {
			e.warm(now)
		}
		return e.node0
	}
	if now-rt.since >= routeTTL {
		rt.drop(now)
	}
	if n := rt.bySlot[ks.slot]; n != nil {
		return n
	}
	// The client's map, loaded already (warm): a lookup, no call.
	c, err := rt.c.MasterForKey(e.ioCtx, ks.name)
	if err != nil {
		return e.node0
	}
	addr := c.Options().Addr
	n := rt.nodes[addr]
	if n == nil {
		n = &node{addr: addr}
		rt.nodes[addr] = n
	}
	rt.bySlot[ks.slot] = n
	return n
}

// drop forgets the cache of slots, at now.
func (rt *router) drop(now int64) {
	clear(rt.bySlot)
	rt.since = now
}

// rerouted tells the router of a call that failed with err: a node out
// of reach, a slot that moved beyond go-redis's redirects, or one that no
// master serves.
func (e *engine) rerouted(err error, now int64) {
	if e.router == nil {
		return
	}
	if outOfReach(err) || redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK") || redis.HasErrorPrefix(err, "CLUSTERDOWN") {
		e.router.drop(now)
	}
}

// begin marks b under way to its node. With one node, an Acquire that
// comes meanwhile need not wake the owner (send); on a Cluster it may be
// for a node with nothing under way, so it always does.
func (e *engine) begin(b *batch) {
	b.node.busy = b
	e.nbusy++
	if e.router == nil {
		e.calling.Store(true)
	}
}

// end marks b, answered or timed out, no longer under way.
func (e *engine) end(b *batch) {
	b.node.busy = nil
	e.nbusy--
}

// closeBatches takes every batch under way from its worker, b included
// if it came already, for Close: a batch that nobody had delivered yet
// is the owner's now (its late answer is dropped), and one that a worker
// or the timeout delivered just now is taken from the results.
func (e *engine) closeBatches(b *batch) []*batch {
	var got []*batch
	if b != nil {
		got = append(got, b)
	}
	e.eachNode(func(n *node) {
		switch {
		case n.busy == nil || n.busy == b:
		case n.busy.state.CompareAndSwap(bPending, bClosed):
			got = append(got, n.busy)
		default:
			got = append(got, <-e.results) // each delivered batch is sent once
		}
	})
	return got
}

// eachNode calls f for every node the engine has.
func (e *engine) eachNode(f func(*node)) {
	f(e.node0)
	if e.router != nil {
		for _, n := range e.router.nodes {
			f(n)
		}
	}
}
