// Package permitstest finds permits that tests acquire and never release:
// the leak a goroutine-leak check cannot see, since a forgotten permit
// holds capacity, not a goroutine. Use it beside goleak.VerifyNone:
//
//	func TestWorker(t *testing.T) {
//		t.Cleanup(func() { goleak.VerifyNone(t) }) // registered first: runs last
//		lim := permitstest.Track(t, pool, permitstest.WithStacks())
//		runWorker(ctx, lim) // fails the test if it keeps a permit
//	}
package permitstest

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/permits"
)

// Option configures Track.
type Option interface{ apply(*tracker) }

type optionFunc func(*tracker)

func (f optionFunc) apply(tr *tracker) { f(tr) }

// WithStacks records the stack of every Acquire, so that a failure shows
// where each leaked permit was acquired. Without it Track records no stack
// at all (and costs a map insertion and deletion per permit); with it each
// Acquire costs a runtime.Callers and 256 bytes.
func WithStacks() Option { return optionFunc(func(tr *tracker) { tr.stacks = true }) }

// WithName names the limiter in failure messages (default: its type).
func WithName(name string) Option { return optionFunc(func(tr *tracker) { tr.name = name }) }

// Track returns lim wrapped so that every permit acquired through it is
// recorded until it is released, and registers a t.Cleanup that fails t,
// listing each permit still held then (with the stack where it was
// acquired, under WithStacks). Code under test should get the wrapper
// instead of lim; permits must be released before the test's cleanups run.
//
// Every permit counts, a rate limiter's too, although its Release does
// nothing: code that takes a permits.Limiter cannot know what it was given,
// so it must release what it acquires. The wrapper is a permits.Refunder
// (and a permits.Settler) when lim is one, so that permits.All still
// refunds (and settles) through it; a refunded grant counts as released, a
// settled one does not.
//
// The wrapper is safe for concurrent use.
func Track(t testing.TB, lim permits.Limiter, opts ...Option) permits.Limiter {
	t.Helper()
	tr := &tracker{lim: lim, name: fmt.Sprintf("%T", lim), held: map[*record]struct{}{}}
	for _, o := range opts {
		o.apply(tr)
	}
	t.Cleanup(func() { tr.check(t) })
	if s, ok := lim.(permits.Settler); ok {
		return &settler{refunder{tracker: tr, ref: s}, s}
	}
	if r, ok := lim.(permits.Refunder); ok {
		return &refunder{tracker: tr, ref: r}
	}
	return tr
}

type tracker struct {
	lim    permits.Limiter
	name   string
	stacks bool

	mu   sync.Mutex
	held map[*record]struct{}
	seq  uint64
}

// record is one permit handed out; its token's Value is the record.
type record struct {
	tok   permits.Token
	inner permits.Grant // the wrapped limiter's permit (and grant)
	id    uint64
	pcs   []uintptr
}

func (tr *tracker) Acquire(ctx context.Context, cost int64) (permits.Permit, error) {
	p, err := tr.lim.Acquire(ctx, cost)
	if err != nil {
		return p, err
	}
	return tr.wrap(permits.Grant{Permit: p}).Permit, nil
}

func (tr *tracker) TryAcquire(cost int64) (permits.Permit, error) {
	p, err := tr.lim.TryAcquire(cost)
	if err != nil {
		return p, err
	}
	return tr.wrap(permits.Grant{Permit: p}).Permit, nil
}

// wrap records inner and returns a grant whose permit releases it once.
func (tr *tracker) wrap(inner permits.Grant) permits.Grant {
	rec := &record{inner: inner}
	rec.tok.Value = rec
	if tr.stacks {
		pcs := make([]uintptr, 32)
		rec.pcs = pcs[:runtime.Callers(3, pcs)] // from the caller of Acquire
	}
	tr.mu.Lock()
	tr.seq++
	rec.id = tr.seq
	tr.held[rec] = struct{}{}
	tr.mu.Unlock()
	out := inner
	out.Permit = permits.NewPermit(inner.Cost(), tr, &rec.tok)
	return out
}

// forget removes rec and reports whether it was held.
func (tr *tracker) forget(rec *record) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	_, ok := tr.held[rec]
	delete(tr.held, rec)
	return ok
}

// ReleasePermit is what the wrapper's permits call on Release.
func (tr *tracker) ReleasePermit(p permits.Permit) {
	if rec, ok := p.Token().Value.(*record); ok && tr.forget(rec) {
		rec.inner.Release()
	}
}

func (tr *tracker) check(t testing.TB) {
	t.Helper()
	tr.mu.Lock()
	recs := make([]*record, 0, len(tr.held))
	for r := range tr.held {
		recs = append(recs, r)
	}
	tr.mu.Unlock()
	if len(recs) == 0 {
		return
	}
	slices.SortFunc(recs, func(a, b *record) int { return cmp.Compare(a.id, b.id) })
	var b strings.Builder
	fmt.Fprintf(&b, "permitstest: %d permit(s) from %s still held at the end of the test:\n", len(recs), tr.name)
	for _, r := range recs {
		fmt.Fprintf(&b, "  permit #%d, cost %d", r.id, r.inner.Cost())
		if len(r.pcs) == 0 {
			b.WriteString("\n")
			continue
		}
		b.WriteString(", acquired at:\n")
		frames := runtime.CallersFrames(r.pcs)
		for {
			f, more := frames.Next()
			if strings.HasPrefix(f.Function, "testing.") || strings.HasPrefix(f.Function, "runtime.") {
				break
			}
			fmt.Fprintf(&b, "    %s\n        %s:%d\n", f.Function, f.File, f.Line)
			if !more {
				break
			}
		}
	}
	if !tr.stacks {
		b.WriteString("  (permitstest.WithStacks() shows where each was acquired)\n")
	}
	t.Error(b.String())
}

// refunder is the wrapper of a permits.Refunder.
type refunder struct {
	*tracker
	ref permits.Refunder
}

func (r *refunder) AcquireGrant(ctx context.Context, cost int64) (permits.Grant, error) {
	g, err := r.ref.AcquireGrant(ctx, cost)
	if err != nil {
		return g, err
	}
	return r.wrap(g), nil
}

func (r *refunder) TryAcquireGrant(cost int64) (permits.Grant, error) {
	g, err := r.ref.TryAcquireGrant(cost)
	if err != nil {
		return g, err
	}
	return r.wrap(g), nil
}

// Refund refunds the wrapped grant and forgets it.
func (r *refunder) Refund(g permits.Grant) bool {
	rec, ok := g.Token().Value.(*record)
	if !ok || !r.forget(rec) {
		return false
	}
	return r.ref.Refund(rec.inner)
}

// settler is the wrapper of a permits.Settler.
type settler struct {
	refunder
	s permits.Settler
}

// Settle settles the wrapped grant; the permit stays held until Release.
func (s *settler) Settle(g permits.Grant, actual int64) error {
	rec, ok := g.Token().Value.(*record)
	if !ok {
		return permits.ErrUnknownGrant
	}
	return s.s.Settle(rec.inner, actual)
}

var (
	_ permits.Limiter  = (*tracker)(nil)
	_ permits.Refunder = (*refunder)(nil)
	_ permits.Settler  = (*settler)(nil)
)
