package redislimit

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// batch is one round of script calls: one per key with something to send,
// pipelined together, made by a worker goroutine while the owner gathers
// the next round.
type batch struct {
	node  *node // where its calls go
	keys  []*keyCall
	s, r  int64         // the local clock just before sending and just after the answer
	state atomic.Int32  // bPending, then who delivered it (workers.go)
	timer *time.Timer   // a worker's call: its timeout
	due   time.Time     // a call on the direct path: its deadline
	back  chan []answer // a call on the direct path: its answers, from a worker
}

// keyCall is one script call: a key's requests in FIFO order, and perhaps
// a give-back (trailing slots nobody can use, or a Refund).
type keyCall struct {
	ks      *keyState
	reqs    []*request
	give    []*slot    // slots given back (a GCRA's: if the key still holds ks.value)
	settles []*request // Refunds (a GCRA's: at most one, instead of give) and a window's Settles
	moves   []*slot    // a window's reservations that may move earlier
	pauses  []*request // a window's Pauses
	trims   []trim     // a window's: events taken down to their holders' cost, first in its settlements
	args    []any
	keys    []string // the script's keys, if not the key's name alone (replay.go)
	lean    bool     // a GCRA's lone request: leanScript

	answer
}

// dispatch builds a batch per node of every ready key's requests, and the
// give-backs that are safe to try, and marks them under way; none for a
// node with a batch under way already (its keys stay ready), and none if
// there is nothing to send. A node out of reach fails its keys' requests
// without a call.
func (e *engine) dispatch(now int64) []*batch {
	if len(e.ready) == 0 || e.nbusy > 0 && e.router == nil {
		return nil // one node, and its batch is under way
	}
	bs := e.started[:0]
	kept := e.ready[:0]
	for _, ks := range e.ready {
		n := e.nodeOf(ks, now)
		switch {
		case n.next != nil:
		case n.busy != nil:
			kept = append(kept, ks) // it goes when its node answers
			continue
		case !n.reachable(e, now):
			e.failKey(ks, n.downErr)
			continue
		default:
			n.next = &batch{node: n}
			bs = append(bs, n.next)
		}
		ks.ready = false
		if kc := e.prepare(ks, now); kc != nil {
			n.next.keys = append(n.next.keys, kc)
		}
	}
	clear(e.ready[len(kept):])
	e.ready = kept
	out := bs[:0]
	for _, b := range bs {
		b.node.next = nil
		if len(b.keys) > 0 {
			e.begin(b)
			out = append(out, b)
		}
	}
	clear(bs[len(out):])
	e.started = out
	return out
}

// failKey fails the key's requests without a call, while its node is
// taken to be down (cause): they were never sent.
func (e *engine) failKey(ks *keyState, cause error) {
	ks.ready = false
	for _, r := range ks.line {
		if r.phase == phPending {
			ks.left(r)
			e.unsent(r, ks.name, cause)
		}
	}
	ks.line = slices.DeleteFunc(ks.line, func(r *request) bool { return r.phase == phGone })
	for _, r := range ks.refunds {
		e.finish(r, stUnavailable, 0, &UnavailableError{Key: ks.name, Cause: cause})
	}
	ks.refunds = nil
	e.markDirty(ks)
}

// unsent fails r, which Redis did not decide: it falls open, or fails
// with an *UnavailableError.
func (e *engine) unsent(r *request, key string, cause error) {
	e.finish(r, e.undecided(), 0, &UnavailableError{Key: key, Cause: cause})
}

// prepare builds the key's script call, or returns nil if it has nothing
// to send.
func (e *engine) prepare(ks *keyState, now int64) *keyCall {
	if ks.inflight {
		return nil
	}
	kc := &keyCall{ks: ks}
	buf := e.scratchB[:0]
	var cost, mw, run int64 // the run of requests alike not yet written
	runs := e.win == nil    // the window script reads one entry per request
	for _, r := range ks.line {
		if len(kc.reqs) == e.cfg.maxBatch {
			break
		}
		if r.phase != phPending || r.state.Load() != rqWaiting {
			continue // a request whose caller gave up is dropped by its cancellation
		}
		w := e.maxWait(r, now)
		if run > 0 && (!runs || r.cost != cost || w != mw) {
			buf = appendRun(buf, cost, mw, run)
			run = 0
		}
		cost, mw, run = r.cost, w, run+1
		r.phase = phInflight
		ks.pending--
		kc.reqs = append(kc.reqs, r)
	}
	if run > 0 {
		buf = appendRun(buf, cost, mw, run)
	}
	reqs := string(buf)
	e.scratchB = buf
	if e.win != nil {
		e.windowArgs(ks, kc, reqs, now)
	} else {
		e.gcraArgs(ks, kc, reqs, now)
	}
	if len(kc.reqs) == 0 && len(kc.settles) == 0 && len(kc.give) == 0 && len(kc.pauses) == 0 && len(kc.trims) == 0 {
		return nil
	}
	ks.inflight = true
	return kc
}

// appendEntry appends one entry of a script's list argument to buf:
// "a:b:...", after a comma unless it is the first.
func appendEntry(buf []byte, fields ...int64) []byte {
	if len(buf) > 0 {
		buf = append(buf, ',')
	}
	for i, f := range fields {
		if i > 0 {
			buf = append(buf, ':')
		}
		buf = strconv.AppendInt(buf, f, 10)
	}
	return buf
}

// appendRun appends the entry of n requests alike, "cost:maxwait" or
// "cost:maxwait:n", to the batch script's list.
func appendRun(buf []byte, cost, mw, n int64) []byte {
	if n == 1 {
		return appendEntry(buf, cost, mw)
	}
	return appendEntry(buf, cost, mw, n)
}

// gcraArgs completes a GCRA's call: one give-back at most, a Refund's or
// the trailing slots nobody can use.
func (e *engine) gcraArgs(ks *keyState, kc *keyCall, reqs string, now int64) {
	var give ident
	var g pair
	if len(ks.refunds) > 0 {
		r := ks.refunds[0]
		ks.refunds = ks.refunds[1:]
		kc.settles = []*request{r}
		give, g = r.refund, e.q.ticks(r.cost)
	} else if kc.give = ks.trailing(now); len(kc.give) > 0 {
		for _, s := range kc.give {
			s.giving = true
		}
		give, g = ks.value, ks.tat.sub(kc.give[len(kc.give)-1].start, e.q.c)
	}
	if len(kc.reqs) == 1 && len(kc.settles) == 0 && len(kc.give) == 0 {
		r := kc.reqs[0]
		kc.lean, kc.args = true, e.leanArgs(r.cost, e.maxWait(r, now), ks.floorAt(now))
		return
	}
	kc.args = []any{e.args[0], e.args[1], e.args[2], e.args[3], "0", give.key(), g.w, g.f, reqs, ks.floorArg(now)}
	if give.ok {
		// A give-back applied twice would be reported as refused (replay.go).
		kc.args = append(kc.args, e.nextCallID(), e.replayTTL())
		kc.keys = []string{ks.name, e.replayKey(ks)}
	}
}

// leanArgs are the arguments of leanScript for one request of cost that
// may wait mw µs (maxWait), on a key whose floor is fl (floor.go).
func (e *engine) leanArgs(cost, mw int64, fl pair) []any {
	inc := e.q.ticks(cost)
	return []any{packLean(e.q.c, e.q.tau.w, e.q.tau.f, 0, mw, inc.w, inc.f, fl.w, fl.f)}
}

// packLean packs leanScript's argument: C, tau (whole µs, ticks), the
// instant to decide at (0: Redis TIME), maxwait, the cost's span (whole
// µs, ticks) and the floor (whole µs, ticks; 0 0 for none).
func packLean(c, tauW, tauF, now, mw, incW, incF, floorW, floorF int64) string {
	return packFloats(c, tauW, tauF, now, mw, incW, incF, floorW, floorF)
}

// packFloats packs integers below 2^53 as the scripts' struct.pack does
// with '<d...': little-endian float64s.
func packFloats(xs ...int64) string {
	b := make([]byte, 0, 8*len(xs))
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(x)))
	}
	return string(b)
}

// leanAt is leanScript's argument a with the instant to decide at set to
// now (WithServerClock).
func leanAt(a string, now int64) string {
	b := []byte(a)
	binary.LittleEndian.PutUint64(b[24:32], math.Float64bits(float64(now)))
	return string(b)
}

// maxWait is how far ahead Redis may reserve for r, in µs (-1: no limit),
// and whether r's deadline sets it.
func (e *engine) maxWait(r *request, now int64) int64 {
	if r.op == opTry {
		return 0
	}
	mw := int64(-1)
	if e.cfg.maxWait >= 0 {
		mw = micros(e.cfg.maxWait)
	}
	r.dlBound = false
	if r.hasDL {
		if d := max(r.deadline-now, 0) / 1000; mw < 0 || d < mw {
			mw, r.dlBound = d, true
		}
	}
	return mw
}

// spare returns the slots of the key that nobody holds or can use and
// that are safe to give back: a GCRA's trailing ones, any of a window's.
func (e *engine) spare(ks *keyState, now int64) []*slot {
	if e.win != nil {
		return ks.unheld()
	}
	return ks.trailing(now)
}

// trailing returns the slots at the end of the key's list that nobody
// holds or can use, if giving them back is provably safe: they are the
// latest admissions on the key, one right behind the other, ending at the
// TAT of the value this process saw last, so that unless someone wrote
// since (which the script checks), nothing was admitted behind them.
func (ks *keyState) trailing(now int64) []*slot {
	if !ks.value.ok {
		return nil
	}
	var give []*slot
	end := ks.tat
	for i := len(ks.slots) - 1; i >= 0; i-- {
		s := ks.slots[i]
		if s.holders > 0 || s.left < s.cost || s.giving || s.at <= now || s.end != end {
			break
		}
		give = append(give, s)
		end = s.start
	}
	return give
}

// call makes b's calls, counted in its node's inCall while they are
// inside go-redis, with a context whose deadline is due: go-redis keeps it
// with ContextTimeoutEnabled, and ignores it otherwise (the engine's timers
// keep it then).
func (e *engine) call(b *batch, due time.Time) []answer {
	b.node.inCall.Add(1)
	defer b.node.inCall.Add(-1)
	ctx, cancel := context.WithDeadline(e.ioCtx, due)
	defer cancel()
	return e.callKeys(ctx, b.keys)
}

// callKeys makes one script call per key, pipelined when there are
// several, each by its script's SHA1, and sends again by the script's
// text those Redis no longer knows the script for (NOSCRIPT after a
// restart or SCRIPT FLUSH), in one pipeline too: redis.Script's Run does
// the same for one command, but a pipeline's errors come only after it
// is sent. Stats.Calls counts every command sent, so a NOSCRIPT costs one
// call more.
func (e *engine) callKeys(ctx context.Context, keys []*keyCall) []answer {
	cmds := e.run(ctx, keys, false)
	as := make([]answer, len(keys))
	var again []*keyCall
	var at []int
	for i, c := range cmds {
		if redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			again, at = append(again, keys[i]), append(at, i)
			continue
		}
		as[i] = e.read(c, keys[i])
	}
	if len(again) > 0 {
		for j, c := range e.run(ctx, again, true) {
			as[at[j]] = e.read(c, again[j])
		}
		// Redis lost its scripts (a restart, SCRIPT FLUSH): load the
		// other one too, so that its first call finds it.
		if e.win == nil {
			_ = gcraScript.Load(ctx, e.client).Err()
			_ = leanScript.Load(ctx, e.client).Err()
		}
	}
	return as
}

// run sends one script call per key, by SHA1 or, with load, by text.
func (e *engine) run(ctx context.Context, keys []*keyCall, load bool) []*redis.Cmd {
	call := func(c redis.Scripter, kc *keyCall) *redis.Cmd {
		e.calls.Add(1)
		if !load {
			e.decided.Add(uint64(len(kc.reqs)))
		}
		script := e.script
		if kc.lean {
			script = leanScript
		}
		keys := kc.keys
		if keys == nil {
			keys = []string{kc.ks.name}
		}
		if load {
			return script.Eval(ctx, c, keys, kc.args...)
		}
		return script.EvalSha(ctx, c, keys, kc.args...)
	}
	cmds := make([]*redis.Cmd, len(keys))
	if len(keys) == 1 {
		cmds[0] = call(e.client, keys[0])
		return cmds
	}
	_, _ = e.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, kc := range keys {
			cmds[i] = call(p, kc)
		}
		return nil
	})
	return cmds
}

// answer is what one script call said.
type answer struct {
	now   int64 // Redis's instant, µs
	value ident // a GCRA's value after the call
	gave  bool  // a GCRA's give-back was applied
	epoch int64 // a window's epoch
	first int64 // a window's first new event
	hold  int64 // a window's pause, Redis µs (0: none)
	codes []int64
	err   error
}

// read reads the reply to kc's call.
func (e *engine) read(c *redis.Cmd, kc *keyCall) answer {
	if e.win != nil {
		return readWindow(c, len(kc.trims)+len(kc.settles)+len(kc.give)+len(kc.moves), len(kc.reqs))
	}
	return read(c, len(kc.reqs))
}

// exactInt reads 8 bytes as a little-endian float64 that holds an
// integer of magnitude below 2^53.
func exactInt(b string) (int64, bool) {
	x := math.Float64frombits(binary.LittleEndian.Uint64([]byte(b)))
	if !(x > -maxExact && x < maxExact) || x != math.Trunc(x) {
		return 0, false
	}
	return int64(x), true
}

// read reads a GCRA script call's reply for n requests (the lean
// script's for its one), as lua/gcra.lua documents it.
func read(c *redis.Cmd, n int) answer {
	v, err := c.Text()
	if err != nil {
		return answer{err: err}
	}
	if rest := len(v) - 16 - 8*n; rest != 0 && rest != valueLen {
		return answer{err: fmt.Errorf("%w of %d bytes for %d requests", errMalformed, len(v), n)}
	}
	now, ok0 := exactInt(v[:8])
	gave, ok1 := exactInt(v[8:16])
	if !ok0 || !ok1 || now < 0 || gave < 0 || gave > 1 {
		return answer{err: fmt.Errorf("%w %q", errMalformed, v)}
	}
	a := answer{now: now, gave: gave == 1, codes: make([]int64, n)}
	for i := range a.codes {
		x, ok := exactInt(v[16+8*i : 24+8*i])
		if !ok {
			return answer{err: fmt.Errorf("%w %q", errMalformed, v)}
		}
		a.codes[i] = x
	}
	if a.value, err = parseValue(v[16+8*n:]); err != nil {
		return answer{err: err}
	}
	return a
}

// errMalformed is the cause of a call whose reply the limiter could not
// read. Redis answered, so it is not taken to be down (WithProbeInterval);
// the script ran, so the outcome is unknown.
var errMalformed = errors.New("redislimit: malformed reply")

// valueLen is the length of a GCRA key's value: W, F, N and M as
// little-endian float64s (lua/gcra.lua).
const valueLen = 32

// parseValue reads a key's value as a script returned it; "" is no key.
func parseValue(v string) (ident, error) {
	if v == "" {
		return ident{}, nil
	}
	if len(v) != valueLen {
		return ident{}, fmt.Errorf("%w: value %q", errMalformed, v)
	}
	var n [4]int64
	for i := range n {
		x, ok := exactInt(v[8*i : 8*i+8])
		if !ok || x < 0 {
			return ident{}, fmt.Errorf("%w: value %q", errMalformed, v)
		}
		n[i] = x
	}
	return ident{w: n[0], f: n[1], n: n[2], ok: true}, nil
}

// packValue is a key's value W, F, N, M as the scripts store it.
func packValue(w, f, n, m int64) string { return packFloats(w, f, n, m) }

// key is the ident as the batch script compares it, the first 24 bytes
// of the value it names, or "" for none.
func (id ident) key() string {
	if !id.ok {
		return ""
	}
	return packValue(id.w, id.f, id.n, 0)[:24]
}

// outcomeUnknown reports whether a failed call may have been applied:
// anything but a refused connection, a pool that gave none, a closed
// client or an error reply (the script writes only at its end, after
// every check that can fail).
func outcomeUnknown(err error) bool {
	var re redis.Error
	var op *net.OpError
	switch {
	case errors.As(err, &re):
		return false
	case errors.As(err, &op) && op.Op == "dial":
		return false
	case errors.Is(err, redis.ErrClosed), errors.Is(err, redis.ErrPoolTimeout):
		return false
	}
	return true
}
