package redislimit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

const (
	faultsCallers     = 6 // per limiter, Acquire and give up
	faultsTriers      = 2 // per limiter, TryAcquire
	faultsCallTimeout = 300 * time.Millisecond
	faultsMaxWait     = 100 * time.Millisecond // the givers'
)

// faultsChild is one process of TestTheSharedBoundHoldsThroughInjectedFaults.
func faultsChild(t *testing.T, addr string) {
	seed, err := strconv.ParseUint(os.Getenv(faultsSeedEnv), 10, 64)
	require.NoError(t, err)
	p := redistest.NewProxy(t, addr)
	c := redis.NewClient(&redis.Options{Addr: p.Addr}) // go-redis's defaults: MaxRetries 3
	t.Cleanup(func() { c.Close() })
	injectFaults(p, seed)

	var out printed
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	who := fmt.Sprintf("p%d", seed)
	g := newFaultParts(t, &out, "G", who, func(opts ...redislimit.Option) (limit, error) {
		return redislimit.New(c, "faults-gcra", algorithms.PerSecond(gcraPerSec), gcraBurst, opts...)
	})
	w := newFaultParts(t, &out, "W", who, func(opts ...redislimit.Option) (limit, error) {
		return redislimit.NewWindow(c, "faults-window", algorithms.Rate{Count: winLimit, Per: winPer}, opts...)
	})
	g.start(t, ctx, &wg, seed)
	w.start(t, ctx, &wg, 100+seed)
	// The run lasts until the proxy has injected this child's share of
	// the faults, however fast this machine makes the calls.
	tick := time.NewTicker(10 * time.Millisecond)
	for p.Faults().Total() < faultsPerChild {
		<-tick.C
	}
	tick.Stop()
	cancel()
	ended := make(chan struct{})
	go func() { wg.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(faultsCallsEnd):
		t.Fatalf("calls still under way %v after the run ended", faultsCallsEnd)
	}
	g.close(t)
	w.close(t)
	f := p.Faults()
	out.add("F %d %d %d", f.Cut, f.Dropped, f.Delayed)
	out.add("S process %d: GCRA %s", seed, statsLine(g.main.Stats(), g.giver.Stats()))
	out.add("S process %d: Window %s", seed, statsLine(w.main.Stats(), w.giver.Stats()))
	fmt.Println(out.String())
}

// injectFaults makes p drop 8% of the script calls, cut the reply of 12%
// of the rest after Redis ran them, and hold the reply of 15% of what is
// left: for 1 to 20 ms, or for one in thirty of them past the call
// timeout (a call of unknown outcome whose reply still comes).
func injectFaults(p *redistest.Proxy, seed uint64) {
	p.DropCommands(redistest.AtRate(0.12, 3*seed, isScriptCall))
	p.CutReplies(redistest.AtRate(0.18, 3*seed+1, isScriptCall))
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(3*seed+2, 26))
	p.DelayReplies(func(cmd []byte) time.Duration {
		if !isScriptCall(cmd) {
			return 0
		}
		mu.Lock()
		defer mu.Unlock()
		switch x := rng.Float64(); {
		case x >= 0.2:
			return 0
		case x < 0.005:
			return faultsCallTimeout + 100*time.Millisecond
		}
		return time.Duration(1+rng.IntN(20)) * time.Millisecond
	})
}

// isScriptCall reports whether a client's bytes hold EVALSHA or EVAL, as
// go-redis writes them.
func isScriptCall(cmd []byte) bool { return bytes.Contains(cmd, []byte("\r\neval")) }

// printed is the lines a child prints, gathered from its goroutines.
type printed struct {
	mu    sync.Mutex
	lines []string
}

func (p *printed) add(format string, args ...any) {
	p.mu.Lock()
	p.lines = append(p.lines, fmt.Sprintf(format, args...))
	p.mu.Unlock()
}

func (p *printed) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

func statsLine(main, giver redislimit.Stats) string {
	return fmt.Sprintf("granted %d+%d, refunded or settled %d, unavailable %d+%d, given back %d units, calls %d+%d",
		main.Granted, giver.Granted, giver.Refunded, main.Unavailable, giver.Unavailable, main.GivenBack, main.Calls, giver.Calls)
}

// expected reports whether err is one a caller of the run may meet: its
// own give-up, a refusal, or Redis unavailable (a call that failed all of
// go-redis's tries, or timed out).
func expected(err error) bool {
	return err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, permits.ErrRateLimited) || errors.Is(err, redislimit.ErrUnavailable)
}

// acquirer is what the callers of a limiter call.
type acquirer interface {
	Acquire(ctx context.Context, cost int64) (permits.Permit, error)
	TryAcquire(cost int64) (permits.Permit, error)
}

// startCallers runs, until ctx ends, faultsCallers callers that Acquire
// and give up after 5 to 105 ms, and faultsTriers that TryAcquire, paced
// by the RetryAfter of their refusals.
func startCallers(t *testing.T, ctx context.Context, wg *sync.WaitGroup, l acquirer, seed uint64) {
	for i := range faultsCallers + faultsTriers {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		try := i >= faultsCallers
		wg.Go(func() {
			for ctx.Err() == nil {
				var err error
				if try {
					_, err = l.TryAcquire(1)
				} else {
					// Cancelled rather than given a deadline: Redis
					// reserves for it however far ahead, and it gives up.
					cctx, stop := context.WithCancel(ctx)
					tm := time.AfterFunc(time.Duration(5+rng.IntN(100))*time.Millisecond, stop)
					_, err = l.Acquire(cctx, 1)
					tm.Stop()
					stop()
				}
				if !expected(err) {
					t.Errorf("a caller: %v", err)
					return
				}
				pace(ctx, err)
			}
		})
	}
}

// pace waits, or until ctx ends, as a client would after err: out a
// refusal's RetryAfter, at least 1 ms (a refusal behind this process's
// waiters has a lower bound of a µs) and at most 20 ms; 5 ms after Redis
// was unavailable (requests fail at once while a call that timed out is
// still inside go-redis); not at all after anything else.
func pace(ctx context.Context, err error) {
	var d time.Duration
	var rl *permits.RateLimitError
	switch {
	case errors.As(err, &rl):
		d = min(max(rl.RetryAfter, time.Millisecond), 20*time.Millisecond)
	case errors.Is(err, redislimit.ErrUnavailable):
		d = 5 * time.Millisecond
	default:
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
	}
}
