package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/human"
	"github.com/sluicehq/sluice/cmd/sluice/internal/muldiv"
)

// Retry is how refused callers retry, as real clients do: after the
// refusal's RetryAfter or an exponential back-off, with jitter. The zero
// Retry retries nothing.
type Retry struct {
	// Max is the most retries of one request after its first attempt.
	Max int
	// Exp waits base·2^(k-1), at most Cap, before retry k; otherwise the
	// caller waits the RetryAfter its refusal carries.
	Exp       bool
	Base, Cap time.Duration
	Jitter    Jitter
}

// Jitter is the random part of a retry's wait D.
type Jitter int

// The jitters. After a RetryAfter, jitter never brings a retry before the
// instant the limit named (it would be refused again for nothing): Full
// draws the wait uniformly from [D, 2D], Equal from [D, 3D/2]. After a
// back-off they are the classic ones: Full from [0, D], Equal from [D/2, D].
const (
	NoJitter Jitter = iota
	Full
	Equal
)

var jitters = []string{"none", "full", "equal"}

// DefaultRetry is what -retry's options default to.
var DefaultRetry = Retry{Max: 3, Base: 100 * time.Millisecond, Cap: 10 * time.Second, Jitter: Full}

// ErrInvalidRetry is matched by ParseRetry's errors.
var ErrInvalidRetry = errors.New("invalid retry")

// ParseRetry reads "max=3,after=retry-after,jitter=full" or
// "after=exp,base=100ms,cap=10s,jitter=equal": each option named, in any
// order, the others as in DefaultRetry.
func ParseRetry(s string) (Retry, error) {
	r, err := parseRetry(s)
	if err != nil {
		return Retry{}, fmt.Errorf("%w %q: %w", ErrInvalidRetry, s, err)
	}
	return r, nil
}

func parseRetry(s string) (Retry, error) {
	r := DefaultRetry
	seen := map[string]bool{}
	for _, arg := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(arg), "=")
		name, value = strings.ToLower(strings.TrimSpace(name)), strings.ToLower(strings.TrimSpace(value))
		if !ok {
			return Retry{}, fmt.Errorf("%q is not NAME=VALUE (max=, after=, base=, cap=, jitter=)", arg)
		}
		if seen[name] {
			return Retry{}, fmt.Errorf("%s= is given twice", name)
		}
		seen[name] = true
		if err := r.option(name, value); err != nil {
			return Retry{}, err
		}
	}
	if r.Exp && r.Base > r.Cap {
		return Retry{}, fmt.Errorf("base=%s is above cap=%s", human.Exact(r.Base), human.Exact(r.Cap))
	}
	return r, nil
}

func (r *Retry) option(name, value string) error {
	var err error
	switch name {
	case "max":
		r.Max, err = strconv.Atoi(value)
		if err != nil || r.Max < 0 || r.Max > 100 {
			return fmt.Errorf("max=%s is not a whole number from 0 to 100", value)
		}
	case "after":
		switch value {
		case "retry-after":
			r.Exp = false
		case "exp":
			r.Exp = true
		default:
			return fmt.Errorf("after=%s: want retry-after (the refusal's RetryAfter) or exp (exponential back-off)", value)
		}
	case "base", "cap":
		d, perr := time.ParseDuration(value)
		if perr != nil || d <= 0 {
			return fmt.Errorf("%s=%s is not a positive duration such as 100ms", name, value)
		}
		if name == "base" {
			r.Base = d
		} else {
			r.Cap = d
		}
	case "jitter":
		for j, n := range jitters {
			if value == n {
				r.Jitter = Jitter(j)
				return nil
			}
		}
		return fmt.Errorf("jitter=%s: want none, full or equal", value)
	default:
		return fmt.Errorf("unknown option %q: want max=, after=, base=, cap=, jitter=", name)
	}
	return nil
}

// String is the canonical form, which ParseRetry reads back.
func (r Retry) String() string {
	if r.Exp {
		return fmt.Sprintf("max=%d,after=exp,base=%s,cap=%s,jitter=%s", r.Max, human.Exact(r.Base), human.Exact(r.Cap), jitters[r.Jitter])
	}
	return fmt.Sprintf("max=%d,after=retry-after,jitter=%s", r.Max, jitters[r.Jitter])
}

// retrier holds a run's retries to come, in order of instant, and draws
// their jitter from a generator of its own (seeded by the run's seed), so
// that a run is the same for a seed.
type retrier struct {
	Retry
	rng *rand.Rand
	due dueHeap // arrival: the request's first attempt; tries: retries so far
	// the most retries at one instant, and the instant being counted
	peak, peakAt, cur, curAt int64
}

func newRetrier(r Retry, seed uint64) *retrier {
	if r.Max <= 0 {
		return nil
	}
	return &retrier{Retry: r, rng: rand.New(rand.NewPCG(seed, 0x726574727921)), curAt: -1}
}

// wait is the jittered wait before retry k >= 1 of a request refused with
// retryAfter (ns; <= 0 when the refusal named no instant, which falls
// back on the back-off).
func (rt *retrier) wait(k int, retryAfter int64) int64 {
	d, after := retryAfter, !rt.Exp && retryAfter > 0
	if !after {
		d = int64(rt.Cap)
		if shift := k - 1; shift < 63 && rt.Base <= rt.Cap>>shift {
			d = int64(rt.Base << shift)
		}
	}
	switch {
	case rt.Jitter == Full && after:
		return muldiv.Add(d, rt.upTo(d))
	case rt.Jitter == Equal && after:
		return muldiv.Add(d, rt.upTo(d/2))
	case rt.Jitter == Full:
		return rt.upTo(d)
	case rt.Jitter == Equal:
		return d - d/2 + rt.upTo(d/2)
	}
	return d
}

// upTo draws uniformly from [0, n].
func (rt *retrier) upTo(n int64) int64 {
	if n == math.MaxInt64 {
		return rt.rng.Int64()
	}
	return rt.rng.Int64N(n + 1)
}

// counted notes one retry at instant at, for the peak.
func (rt *retrier) counted(at int64) {
	if at != rt.curAt {
		rt.cur, rt.curAt = 0, at
	}
	if rt.cur++; rt.cur > rt.peak {
		rt.peak, rt.peakAt = rt.cur, at
	}
}

// retries makes the retries due at or before until, each an arrival at its
// instant (before the fresh arrivals of that instant), in order.
func (r *run) retries(until int64) {
	rt := r.retry
	for rt.due.len() > 0 && rt.due.min().at <= until && !r.res.Stopped {
		p := rt.due.pop()
		if r.step(p.at); r.res.Stopped {
			return
		}
		r.res.Retries++
		rt.counted(p.at)
		r.attempt(p.at, p.arrival, p.cost, p.key, p.tries)
	}
}

// refused is a refusal of an attempt that waiting could cure: the caller
// retries, when it has retries left, after retryAfter (ns, the instant
// the limit named, less now; <= 0 for none) or its back-off; else the
// request is refused.
func (r *run) refused(now, first, cost int64, key uint32, tries uint32, retryAfter int64) {
	if rt := r.retry; rt != nil && int(tries) < rt.Max {
		at := muldiv.Add(now, rt.wait(int(tries)+1, retryAfter))
		rt.due.push(reservation{arrival: first, at: at, cost: cost, key: key, tries: tries + 1})
		return
	}
	r.refuse(cost, key)
}
