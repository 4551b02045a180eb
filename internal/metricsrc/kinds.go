package metricsrc

import (
	"math"
	"strings"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/internal/configerr"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// What each kind of source reads, written once: both adapters map these
// readings to their instruments (sluiceotel) or descriptors (sluiceprom),
// so that a metric has one name, unit, type and meaning whichever adapter
// publishes it, and a new kind is one list here.

// Instrument is what a reading is, as each adapter publishes it.
type Instrument int

const (
	// Counter only grows: an Int64ObservableCounter, a Prometheus counter
	// (its name ends in _total).
	Counter Instrument = iota
	// UpDown is a count of things present now (waiters, keys, units
	// held): an Int64ObservableUpDownCounter, a Prometheus gauge.
	UpDown
	// Gauge is a value read now (a state, a balance): an
	// Int64ObservableGauge, a Prometheus gauge.
	Gauge
)

// A Metric is one reading's name and meaning.
type Metric struct {
	// Name is OpenTelemetry's, dotted lower case: sluice.<kind>.<what>.
	Name string
	// Unit is OpenTelemetry's: a count of things in braces.
	Unit       string
	Instrument Instrument
	Desc       string
	// Label, when set, splits the reading into one series per value of
	// Values (the breaker's state): the attribute sluice.<kind>.<Label>,
	// the Prometheus label Label.
	Label  string
	Values []string
}

// PromName is Name in Prometheus's style: underscores, and _total on a
// counter.
func (m Metric) PromName() string {
	n := strings.ReplaceAll(m.Name, ".", "_")
	if m.Instrument == Counter {
		n += "_total"
	}
	return n
}

// A Reading is a Metric and how to read it from a value of T: Read(v, i)
// is the series of Values[i], or the one series (i = 0) without a Label.
type Reading[T any] struct {
	Metric
	Read func(v T, i int) int64
}

// A Kind is a kind of source: its name and what it reads.
type Kind[T any] struct {
	// Name is the kind ("limiter", "breaker", "budget", "transport"):
	// sources of one kind need distinct names, carried by the attribute
	// sluice.<Name>.name (a Prometheus label name).
	Name string
	// Algorithm is whether the algorithm attribute applies (limiters).
	Algorithm bool
	// NameOf, when set, names a source by its value (a breaker's or a
	// budget's WithName), read once when the source is made; otherwise
	// the caller names it.
	NameOf   func(T) string
	Readings []Reading[T]
}

// Of returns the readings of a part of T (a limiter's Stats inside a
// pool's), read through part.
func Of[T, P any](part func(T) P, rs []Reading[P]) []Reading[T] {
	out := make([]Reading[T], len(rs))
	for i, r := range rs {
		out[i] = Reading[T]{Metric: r.Metric, Read: func(v T, j int) int64 { return r.Read(part(v), j) }}
	}
	return out
}

func plain[T any](name, unit string, ins Instrument, desc string, read func(T) int64) Reading[T] {
	return Reading[T]{Metric: Metric{Name: name, Unit: unit, Instrument: ins, Desc: desc},
		Read: func(v T, _ int) int64 { return read(v) }}
}

// Clamp is n as an int64, the instruments' type; a counter past 2^63
// (centuries at a billion a second) stays at the largest value.
func Clamp(n uint64) int64 { return int64(min(n, math.MaxInt64)) }

// All returns the metric of every reading of every kind, each name once,
// in the order of the kinds: what an adapter makes instruments for.
func All() []Metric {
	var all []Metric
	seen := map[string]bool{}
	add := func(m Metric) {
		if !seen[m.Name] {
			seen[m.Name] = true
			all = append(all, m)
		}
	}
	for _, ms := range [][]Metric{metrics(Limiter), metrics(Keyed), metrics(Pool), metrics(Breaker),
		metrics(Budget), metrics(Transport)} {
		for _, m := range ms {
			add(m)
		}
	}
	return all
}

func metrics[T any](k *Kind[T]) []Metric {
	ms := make([]Metric, len(k.Readings))
	for i, r := range k.Readings {
		ms[i] = r.Metric
	}
	return ms
}

// The kinds of limiters: what every limiter keeps (permits.Stats), and
// what a keyed limiter and a pool keep beside it.
var (
	Limiter = &Kind[permits.Stats]{Name: "limiter", Algorithm: true, Readings: limiterReadings}
	Keyed   = &Kind[keyed.Stats]{Name: "limiter", Algorithm: true, Readings: append(
		Of(func(s keyed.Stats) permits.Stats { return s.Stats }, limiterReadings),
		plain("sluice.limiter.keys", "{key}", UpDown, "Keys a keyed limiter holds now.",
			func(s keyed.Stats) int64 { return int64(s.Keys) }))}
	Pool = &Kind[actor.PoolStats]{Name: "limiter", Algorithm: true, Readings: append(
		Of(func(s actor.PoolStats) permits.Stats { return s.Stats }, limiterReadings),
		plain("sluice.pool.usage", "{unit}", UpDown, "Cost units a pool holds now.",
			func(s actor.PoolStats) int64 { return s.InFlight }),
		plain("sluice.pool.limit", "{unit}", UpDown, "Cost units a pool holds at most.",
			func(s actor.PoolStats) int64 { return s.Size }))}
)

// Granted and canceled are permits.Stats's words, so that a metric and
// the field it reads have one name.
var limiterReadings = []Reading[permits.Stats]{
	plain("sluice.limiter.granted", "{permit}", Counter, "Permits granted since the limiter was made.",
		func(s permits.Stats) int64 { return Clamp(s.Granted) }),
	plain("sluice.limiter.rejected", "{request}", Counter, "Requests refused (ErrRateLimited, or Allow's false).",
		func(s permits.Stats) int64 { return Clamp(s.Rejected) }),
	plain("sluice.limiter.refunded", "{permit}", Counter, "Grants given back unused; also counted in granted.",
		func(s permits.Stats) int64 { return Clamp(s.Refunded) }),
	plain("sluice.limiter.canceled", "{request}", Counter, "Waiters whose context ended while they waited.",
		func(s permits.Stats) int64 { return Clamp(s.Canceled) }),
	plain("sluice.limiter.waiting", "{request}", UpDown, "Acquires waiting for their answer now.",
		func(s permits.Stats) int64 { return int64(s.Waiting) }),
}

// Named checks the arguments of a source of kind k and returns its name:
// name for a kind the caller names, which must not be empty, or the
// value's own (k.NameOf, read once, here). It fails, matching
// permits.ErrInvalidConfig with pkg's name, for a nil stats.
func Named[T any](pkg string, k *Kind[T], name string, stats func() T) (string, error) {
	switch {
	case k.NameOf == nil && name == "":
		return "", configerr.Errorf(pkg, "a %s needs a name, got \"\"", k.Name)
	case stats == nil && k.NameOf == nil:
		return name, configerr.Errorf(pkg, "%s %q: the stats function is nil", k.Name, name)
	case stats == nil:
		return "", configerr.Errorf(pkg, "a %s: the stats function is nil", k.Name)
	case k.NameOf != nil:
		return k.NameOf(stats()), nil
	}
	return name, nil
}
