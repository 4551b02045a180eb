package redislimit_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/redislimit"
)

// limit is what a child's run calls of a Limiter or a Window.
type limit interface {
	acquirer
	AcquireGrant(ctx context.Context, cost int64) (permits.Grant, error)
	TryAcquireGrant(cost int64) (permits.Grant, error)
	Refund(g permits.Grant) bool
	Stats() redislimit.Stats
	Close() error
}

// faultParts is one limit of a child's run, on a key the children share:
// main, for the callers that Acquire or TryAcquire, tells out of every
// grant; giver, a second limiter on the same key, serves one caller that
// gives grants back, so that its grant hook tells of that caller's grants
// in the order it gets them.
type faultParts struct {
	tag, who    string // the lines' tag, and the process, for the lines' last field
	out         *printed
	main, giver limit
	gave        givings
}

func newFaultParts(t *testing.T, out *printed, tag, who string, make func(...redislimit.Option) (limit, error)) *faultParts {
	pt := &faultParts{tag: tag, who: who, out: out}
	opts := []redislimit.Option{redislimit.WithProbeInterval(0), redislimit.WithCallTimeout(faultsCallTimeout)}
	var err error
	pt.main, err = make(append(opts, redislimit.WithGrantHook(func(at, cost int64) {
		out.add("%s %d %d %s:main", tag, at, cost, who)
	}))...)
	require.NoError(t, err)
	pt.giver, err = make(append(opts, pt.gave.hook(), redislimit.WithMaxWait(faultsMaxWait))...)
	require.NoError(t, err)
	return pt
}

func (pt *faultParts) start(t *testing.T, ctx context.Context, wg *sync.WaitGroup, seed uint64) {
	startCallers(t, ctx, wg, pt.main, seed)
	wg.Go(func() { pt.give(t, ctx, seed) })
}

// give takes grants of 1 to 3 units, alternately now and reserved ahead,
// and gives back half of them: a Limiter's by Refund; a Window's by
// Refund, or by Settle at what the grant used, 0 to its cost. A grant
// given back used nothing, whether Refund took it back or not (its caller
// does not use it); one settled used what it was settled at, whether
// Redis could be told or not.
func (pt *faultParts) give(t *testing.T, ctx context.Context, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1<<32))
	w, window := pt.giver.(*redislimit.Window)
	for i := 0; ctx.Err() == nil; i++ {
		cost := 1 + rng.Int64N(3)
		var g permits.Grant
		var err error
		if i%2 == 0 {
			g, err = pt.giver.TryAcquireGrant(cost)
		} else {
			g, err = pt.giver.AcquireGrant(context.Background(), cost)
		}
		if err != nil {
			if !expected(err) {
				t.Errorf("a giver: %v", err)
				return
			}
			pace(ctx, err)
			continue
		}
		used, how := cost, "kept"
		switch x := rng.IntN(4); {
		case x == 0 || x == 1 && !window:
			pt.giver.Refund(g)
			used, how = 0, "refunded"
		case x == 1:
			used = rng.Int64N(cost + 1)
			err := w.Settle(g, used)
			how = fmt.Sprintf("settled:%d:%v", cost, err == nil)
			if err != nil && !errors.Is(err, redislimit.ErrUnavailable) {
				t.Errorf("a first Settle of a grant: %v", err)
			}
		}
		pt.gave.got(cost, used, how)
	}
}

// close closes both limiters and tells out of what each grant of the
// giver used.
func (pt *faultParts) close(t *testing.T) {
	require.NoError(t, pt.main.Close())
	require.NoError(t, pt.giver.Close())
	pt.gave.emit(t, pt.out, pt.tag, pt.who)
}

// givings is what a giver did with its grants, in order, beside what its
// limiter's grant hook told of them: the giver is its limiter's only
// caller, and asks for a grant only once it has the one before, so the
// n-th grant the hook tells of is the n-th the giver got.
type givings struct {
	mu     sync.Mutex
	hooked []spent // the instant and the cost, from the hook
	costs  []int64
	used   []int64
	how    []string // kept, refunded, settled:cost:applied
}

func (g *givings) hook() redislimit.Option {
	return redislimit.WithGrantHook(func(at, cost int64) {
		g.mu.Lock()
		g.hooked = append(g.hooked, spent{at: at, units: cost})
		g.mu.Unlock()
	})
}

func (g *givings) got(cost, used int64, how string) {
	g.mu.Lock()
	g.costs = append(g.costs, cost)
	g.used = append(g.used, used)
	g.how = append(g.how, how)
	g.mu.Unlock()
}

// emit tells out of each grant that used something; the giver's limiter
// must be closed.
func (g *givings) emit(t *testing.T, out *printed, tag, who string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	require.Len(t, g.hooked, len(g.costs), "one grant told of per grant got")
	for i, h := range g.hooked {
		require.Equal(t, g.costs[i], h.units, "grant %d", i)
		if g.used[i] > 0 {
			out.add("%s %d %d %s:%s", tag, h.at, g.used[i], who, g.how[i])
		}
	}
}
