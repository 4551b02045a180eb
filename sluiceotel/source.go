package sluiceotel

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/internal/configerr"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// The attribute keys. A name is the one the user gave the limiter (or the
// breaker's WithName, the budget's WithName): a bounded set, never a key
// of a keyed limiter.
const (
	LimiterNameKey  attribute.Key = "sluice.limiter.name"
	AlgorithmKey    attribute.Key = "sluice.limiter.algorithm"
	BreakerNameKey  attribute.Key = "sluice.breaker.name"
	BreakerStateKey attribute.Key = "sluice.breaker.state"
	BudgetNameKey   attribute.Key = "sluice.budget.name"
)

// A Source is one value whose counters a Registration reads at every
// collection: a limiter, a pool, a breaker or a retry budget. Make one
// with Limiter, Keyed, Pool, Breaker or Budget. A Source is a value and
// may be registered with several meters.
type Source struct {
	kind string // "limiter", "breaker" or "budget": names are unique per kind
	name string
	alg  string
	err  error // reported by Register
	// bind returns the function that observes the source at a collection,
	// with its attributes computed once, here.
	bind func(s *Source, in *instruments) func(metric.Observer)
}

// A SourceOption configures a limiter's Source.
type SourceOption interface{ apply(*Source) }

type algorithmOption string

func (a algorithmOption) apply(s *Source) { s.alg = string(a) }

// Algorithm sets the sluice.limiter.algorithm attribute of a limiter's
// metrics ("GCRA", "TokenBucket", "SlidingWindow"...): the limiters do not
// report it, so it is whatever the caller says. Without it, the attribute
// is left out.
func Algorithm(name string) SourceOption { return algorithmOption(name) }

// Limiter observes the counters of a limiter: the granted, rejected,
// refunded and canceled counters and the waiting gauge. stats is usually
// the limiter's Stats method (actor.Limiter.Stats), or a function that
// returns the permits.Stats of a limiter whose Stats embeds them. name
// must not be empty.
func Limiter(name string, stats func() permits.Stats, opts ...SourceOption) Source {
	s := limiterSource(name, stats == nil, opts)
	s.bind = func(s *Source, in *instruments) func(metric.Observer) {
		at := s.limiterAttrs()
		return func(o metric.Observer) { in.observeStats(o, stats(), at) }
	}
	return s
}

// Keyed observes a keyed.Limiter (its Stats method): what Limiter
// observes, over every key, and the number of live keys.
func Keyed(name string, stats func() keyed.Stats, opts ...SourceOption) Source {
	s := limiterSource(name, stats == nil, opts)
	s.bind = func(s *Source, in *instruments) func(metric.Observer) {
		at := s.limiterAttrs()
		return func(o metric.Observer) {
			st := stats()
			in.observeStats(o, st.Stats, at)
			o.ObserveInt64(in.keys, int64(st.Keys), at...)
		}
	}
	return s
}

// Pool observes an actor.Pool (its Stats method): what Limiter observes,
// and the units the pool holds now and its size.
func Pool(name string, stats func() actor.PoolStats, opts ...SourceOption) Source {
	s := limiterSource(name, stats == nil, opts)
	s.bind = func(s *Source, in *instruments) func(metric.Observer) {
		at := s.limiterAttrs()
		return func(o metric.Observer) {
			st := stats()
			in.observeStats(o, st.Stats, at)
			o.ObserveInt64(in.poolUsage, st.InFlight, at...)
			o.ObserveInt64(in.poolLimit, st.Size, at...)
		}
	}
	return s
}

func limiterSource(name string, nilStats bool, opts []SourceOption) Source {
	s := Source{kind: "limiter", name: name}
	for _, o := range opts {
		if o != nil {
			o.apply(&s)
		}
	}
	switch {
	case name == "":
		s.err = invalid("a limiter needs a name, got \"\"")
	case nilStats:
		s.err = invalid("limiter %q: the stats function is nil", name)
	}
	return s
}

func (s *Source) limiterAttrs() attrs { return attrs{metric.WithAttributeSet(s.limiterSet())} }

// limiterSet is the attributes of a limiter's metrics: its name, and its
// algorithm when the caller said it.
func (s *Source) limiterSet() attribute.Set {
	kv := []attribute.KeyValue{LimiterNameKey.String(s.name)}
	if s.alg != "" {
		kv = append(kv, AlgorithmKey.String(s.alg))
	}
	return attribute.NewSet(kv...)
}

// attrs is an attribute set as the options of an observation, made once
// per source so that a collection allocates nothing for it.
type attrs []metric.ObserveOption

func attrsOf(kv ...attribute.KeyValue) attrs {
	return attrs{metric.WithAttributeSet(attribute.NewSet(kv...))}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func invalid(format string, args ...any) error {
	return configerr.Errorf("sluiceotel", format, args...)
}
