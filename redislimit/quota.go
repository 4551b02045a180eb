package redislimit

import (
	"math/bits"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/configerr"
)

// quota is a rate and burst in the script's integer terms: one unit of
// cost occupies p ticks, and there are c ticks in a microsecond, so that
// every emission interval is exact (3/s: p = 1_000_000, c = 3).
type quota struct {
	rate  algorithms.Rate
	burst int64
	p, c  int64
	tau   pair // burst·p ticks
}

// pair is a duration or instant as whole microseconds and ticks of 1/c µs
// beyond them.
type pair struct{ w, f int64 }

// maxExact is 2^53: Lua's numbers are doubles, exact for integers below.
const maxExact = 1 << 53

// horizon is the start of the year 2200 in µs since 1970: the latest
// Redis instant up to which every quota newQuota accepts decides exactly.
// The script forms instants up to now + tau (a key's TAT), so tau must
// stay below maxExact - horizon, about 55 years; a burst spanning longer
// would write a TAT the next call could not read.
const horizon = 7_258_118_400_000_000

func newQuota(rate algorithms.Rate, burst int64) (quota, error) {
	if err := rate.Validate(); err != nil {
		return quota{}, err
	}
	if burst < 1 {
		return quota{}, invalid("burst must be positive, got %d", burst)
	}
	// One unit lasts Per/Count ns = Per/(Count·1000) µs.
	hi, den := bits.Mul64(uint64(rate.Count), 1000)
	if hi != 0 || den >= maxExact {
		return quota{}, invalid("rate %v: count %d is too large for Redis's integer arithmetic", rate, rate.Count)
	}
	num := uint64(rate.Per)
	g := gcd(num, den)
	p, c := int64(num/g), int64(den/g)
	if c >= maxExact/4 {
		return quota{}, invalid("rate %v: the emission interval cannot be kept exact in microseconds", rate)
	}
	hi, span := bits.Mul64(uint64(burst), uint64(p))
	if hi != 0 || span >= maxExact || span/uint64(c)+1 >= maxExact-horizon {
		return quota{}, invalid("burst %d at %v spans too long for Redis's integer arithmetic (burst·interval must stay below 2^53 ticks and 55 years)", burst, rate)
	}
	q := quota{rate: rate, burst: burst, p: p, c: c}
	q.tau = q.ticks(burst)
	return q, nil
}

// ticks returns cost units' span as a pair. Precondition: cost <= burst,
// or a sum of costs whose product with p fits in 64 bits.
func (q quota) ticks(cost int64) pair {
	t := cost * q.p
	return pair{w: t / q.c, f: t % q.c}
}

// add returns a + b, ticks carried into µs at c per µs.
func (a pair) add(b pair, c int64) pair {
	r := pair{w: a.w + b.w, f: a.f + b.f}
	if r.f >= c {
		r.w, r.f = r.w+1, r.f-c
	}
	return r
}

// sub returns a - b.
func (a pair) sub(b pair, c int64) pair {
	r := pair{w: a.w - b.w, f: a.f - b.f}
	if r.f < 0 {
		r.w, r.f = r.w-1, r.f+c
	}
	return r
}

func (p pair) String() string { return strconv.FormatInt(p.w, 10) + "+" + strconv.FormatInt(p.f, 10) }

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func invalid(format string, args ...any) error {
	return configerr.Errorf("redislimit", format, args...)
}

// micros converts a duration to whole µs, rounding down (a wait allowed).
func micros(d time.Duration) int64 { return int64(d / time.Microsecond) }
