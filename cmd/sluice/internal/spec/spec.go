package spec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/cmd/sluice/internal/muldiv"
)

// ErrInvalid is matched, with errors.Is, by every error Parse returns. When
// the algorithm itself refuses the configuration (a burst whose span is too
// long, say), the error matches permits.ErrInvalidConfig too.
var ErrInvalid = errors.New("invalid limit")

// Kind names one of the five algorithms.
type Kind string

// The kinds, as written before the colon.
const (
	GCRA    Kind = "gcra"
	Token   Kind = "token"
	Leaky   Kind = "leaky"
	Sliding Kind = "sliding"
	Fixed   Kind = "fixed"
)

// Kinds lists every kind, in the order the simulator reports them.
var Kinds = []Kind{GCRA, Token, Leaky, Sliding, Fixed}

// Limit is one parsed limit. For GCRA, Token and Leaky, Rate is the rate and
// Size the burst or capacity; for Sliding and Fixed, Rate.Count is the limit
// per window Rate.Per and Size is 0. PerKey makes it a limit per key, as
// package keyed keeps: one algorithm of this configuration for each key of
// the traffic, each key waiting in a FIFO of its own.
type Limit struct {
	Kind   Kind
	Rate   algorithms.Rate
	Size   int64
	PerKey bool
}

// Paced reports whether the kind is one of the three equivalent paced
// algorithms (GCRA, token bucket, leaky bucket), whose admissions are the
// same for the same rate and size.
func (k Kind) Paced() bool { return k == GCRA || k == Token || k == Leaky }

// sizeName is what the kind calls its size, or "" for the windows.
func (k Kind) sizeName() string {
	switch k {
	case GCRA:
		return "burst"
	case Token, Leaky:
		return "capacity"
	}
	return ""
}

// Parse reads a limit in the grammar of the package documentation. Its
// errors match ErrInvalid and say which piece is wrong and what was wanted.
func Parse(s string) (Limit, error) {
	l, err := parse(s)
	if err != nil {
		return Limit{}, fmt.Errorf("%w %q: %w", ErrInvalid, s, err)
	}
	// The algorithm has the last word (spans too long for it, say).
	if _, err := l.New(); err != nil {
		return Limit{}, fmt.Errorf("%w %q: %w", ErrInvalid, s, err)
	}
	return l, nil
}

func parse(s string) (Limit, error) {
	head, rest, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return Limit{}, errors.New(`want KIND:ARGS, such as gcra:100/s,burst=10 or sliding:100/1m`)
	}
	kind := Kind(strings.ToLower(strings.TrimSpace(head)))
	if !known(kind) {
		return Limit{}, fmt.Errorf("unknown kind %q: want one of gcra, token, leaky, sliding, fixed", head)
	}
	l := Limit{Kind: kind}
	var haveRate, haveSize bool
	for _, arg := range strings.Split(rest, ",") {
		arg = strings.TrimSpace(arg)
		name, value, named := strings.Cut(arg, "=")
		name, value = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(value)
		if !named {
			value = arg
			switch {
			case arg == "":
				return Limit{}, errors.New("empty argument")
			case strings.Contains(arg, "/"):
				name = "rate"
			case kind.sizeName() != "":
				name = kind.sizeName()
			default:
				return Limit{}, fmt.Errorf("%s takes a rate only (COUNT/PERIOD such as 100/1m), not %q", kind, arg)
			}
		}
		switch {
		case name == "per":
			if !strings.EqualFold(value, "key") || l.PerKey {
				return Limit{}, fmt.Errorf("per= takes key, once (per=key: one limit per key), not %q", value)
			}
			l.PerKey = true
		case name == "rate":
			if haveRate {
				return Limit{}, errors.New("the rate is given twice")
			}
			r, err := algorithms.ParseRate(value)
			if err != nil {
				return Limit{}, err
			}
			l.Rate, haveRate = r, true
		case name == kind.sizeName():
			if haveSize {
				return Limit{}, fmt.Errorf("the %s is given twice", name)
			}
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil || n < 1 {
				return Limit{}, fmt.Errorf("%s %q is not a whole number of at least 1", name, value)
			}
			l.Size, haveSize = n, true
		default:
			return Limit{}, fmt.Errorf("%s takes %s, not %q", kind, names(kind), name)
		}
	}
	switch {
	case !haveRate:
		return Limit{}, fmt.Errorf("%s needs a rate (COUNT/PERIOD such as 100/s)", kind)
	case !haveSize && (kind == Token || kind == Leaky):
		return Limit{}, fmt.Errorf("%s needs a capacity (a whole number such as 50, or capacity=50)", kind)
	case !haveSize && kind == GCRA:
		l.Size = 1
	}
	return l, nil
}

func known(k Kind) bool {
	for _, x := range Kinds {
		if k == x {
			return true
		}
	}
	return false
}

func names(k Kind) string {
	if n := k.sizeName(); n != "" {
		return "rate=, " + n + "= and per=key"
	}
	return "rate= and per=key only"
}

// String returns the canonical form, which Parse reads back to the same
// Limit: "gcra:100/s,burst=10", "token:1/s,capacity=50", "sliding:100/m",
// "sliding:10/s,per=key".
func (l Limit) String() string {
	s := fmt.Sprintf("%s:%v", l.Kind, l.Rate)
	if n := l.Kind.sizeName(); n != "" {
		s += fmt.Sprintf(",%s=%d", n, l.Size)
	}
	if l.PerKey {
		s += ",per=key"
	}
	return s
}

// New returns a fresh algorithm for the limit.
func (l Limit) New() (algorithms.Algorithm, error) {
	switch l.Kind {
	case GCRA:
		return algorithms.NewGCRA(l.Rate, l.Size)
	case Token:
		return algorithms.NewTokenBucket(l.Rate, l.Size)
	case Leaky:
		return algorithms.NewLeakyBucket(l.Rate, l.Size)
	case Sliding:
		return algorithms.NewSlidingWindow(l.Rate)
	case Fixed:
		return algorithms.NewFixedWindow(l.Rate)
	}
	return nil, fmt.Errorf("%w: unknown kind %q", ErrInvalid, l.Kind)
}

// Capacity is the largest cost the limit admits in one decision.
func (l Limit) Capacity() int64 {
	if l.Kind.Paced() {
		return l.Size
	}
	return l.Rate.Count
}

// Bound returns the most cost units the limit can admit in any half-open
// window [t, t+d) of length d > 0, whatever the traffic, by each
// algorithm's own guarantee:
//
//   - gcra, token, leaky: size + ⌊rate·(d-1ns)⌋: they admit at most
//     size + ⌊rate·x⌋ in any closed window of length x, and on instants of
//     whole nanoseconds a half-open window of length d is a closed one of
//     length d-1ns;
//   - sliding: limit · ⌈d/window⌉ (d splits into that many windows of its own);
//   - fixed: limit · (⌊(d-1ns)/window⌋ + 2), the most aligned windows that a
//     window of length d can touch; 2·limit for d = window.
//
// It saturates at MaxInt64.
func (l Limit) Bound(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	w := int64(l.Rate.Per)
	switch l.Kind {
	case Sliding:
		return muldiv.Mul(l.Rate.Count, (int64(d)+w-1)/w)
	case Fixed:
		return muldiv.Mul(l.Rate.Count, (int64(d)-1)/w+2)
	}
	return muldiv.Add(l.Size, muldiv.Floor(l.Rate.Count, int64(d)-1, w))
}

// ParseUpstream reads the limit an upstream enforces: a limit as Parse reads
// it, or a bare rate ("100/s"), which means a sliding window (at most COUNT
// in any window of PERIOD), the usual reading of an API's documented quota.
func ParseUpstream(s string) (Limit, error) {
	if t := strings.TrimSpace(s); !strings.Contains(t, ":") && strings.Contains(t, "/") {
		return Parse(string(Sliding) + ":" + t)
	}
	return Parse(s)
}
