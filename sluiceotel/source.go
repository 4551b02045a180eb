package sluiceotel

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/internal/configerr"
	"github.com/sluicehq/sluice/internal/metricsrc"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// The attribute keys: sluice.<kind>.name for the name of a source of each
// kind, and a key of its own for each reading split into series. A name
// is the one the user gave the limiter or Transport (or the breaker's
// WithName, the budget's WithName): a bounded set, never a key of a keyed
// limiter nor a host.
const (
	LimiterNameKey     attribute.Key = "sluice.limiter.name"
	AlgorithmKey       attribute.Key = "sluice.limiter.algorithm"
	BreakerNameKey     attribute.Key = "sluice.breaker.name"
	BreakerStateKey    attribute.Key = "sluice.breaker.state"
	BudgetNameKey      attribute.Key = "sluice.budget.name"
	TransportNameKey   attribute.Key = "sluice.transport.name"
	TransportReasonKey attribute.Key = "sluice.transport.reason" // of sluice.transport.pauses: 429, 503, other
	TransportClassKey  attribute.Key = "sluice.transport.class"  // of sluice.transport.responses: 1xx...5xx, other
)

// namespace begins every metric's and attribute's name: sluice.<kind>.
const namespace = "sluice."

// A Source is one value whose counters a Registration reads at every
// collection: a limiter, a pool, a breaker, a retry budget or a
// Transport. Make one with Limiter, Keyed, Pool, Breaker, Budget or
// Transport. A Source is a value and may be registered with several
// meters.
type Source struct {
	kind string // "limiter", "breaker", "budget" or "transport": names are unique per kind
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
	return source(metricsrc.Limiter, name, stats, opts)
}

// Keyed observes a keyed.Limiter (its Stats method): what Limiter
// observes, over every key, and the number of live keys.
func Keyed(name string, stats func() keyed.Stats, opts ...SourceOption) Source {
	return source(metricsrc.Keyed, name, stats, opts)
}

// Pool observes an actor.Pool (its Stats method): what Limiter observes,
// and the units the pool holds now and its size.
func Pool(name string, stats func() actor.PoolStats, opts ...SourceOption) Source {
	return source(metricsrc.Pool, name, stats, opts)
}

// Breaker observes a circuit breaker (its Snapshot method): its state, as
// a gauge that is 1 for the current state and 0 for the two others, and
// its transitions since it was made. The sluice.breaker.name attribute is
// the breaker's WithName, read once here.
func Breaker(snapshot func() breaker.Snapshot) Source {
	return source(metricsrc.Breaker, "", snapshot, nil)
}

// Budget observes a retry budget (its Stats method): its balance and the
// deposits, withdrawals and refusals still in its window. These three are
// gauges, not counters: they count the budget's window (its ttl), and fall
// as events leave it. The sluice.budget.name attribute is the budget's
// WithName, read once here.
func Budget(stats func() budget.Stats) Source {
	return source(metricsrc.Budget, "", stats, nil)
}

// Transport observes an httplimit.Transport (its Stats method): requests,
// attempts, paced waits, retries and those the budget refused, attempts
// the breaker refused, pauses started by the status that asked
// (sluice.transport.reason), responses by class (sluice.transport.class)
// and the hosts paused now. name, the sluice.transport.name attribute,
// names the API it calls and must not be empty; hosts are never
// attributes.
func Transport(name string, stats func() httplimit.TransportStats) Source {
	return source(metricsrc.Transport, name, stats, nil)
}

// source is a Source of kind k: its readings, observed from one call of
// stats per collection.
func source[T any](k *metricsrc.Kind[T], name string, stats func() T, opts []SourceOption) Source {
	s := Source{kind: k.Name}
	for _, o := range opts {
		if o != nil {
			o.apply(&s)
		}
	}
	if s.name, s.err = metricsrc.Named("sluiceotel", k, name, stats); s.err != nil {
		return s
	}
	s.bind = func(s *Source, in *instruments) func(metric.Observer) {
		return observer(k, stats, s.attributes(k.Name, k.Algorithm), in)
	}
	return s
}

// observer returns the function that observes every reading of k, each
// series with its attributes made here, once.
func observer[T any](k *metricsrc.Kind[T], stats func() T, base []attribute.KeyValue, in *instruments) func(metric.Observer) {
	type series struct {
		inst metric.Int64Observable
		at   []attrs // one per value of the reading's label, or the one
	}
	all := make([]series, len(k.Readings))
	for i, r := range k.Readings {
		all[i].inst = in.byName[r.Name]
		if r.Label == "" {
			all[i].at = []attrs{attrsOf(base...)}
			continue
		}
		key := attribute.Key(namespace + k.Name + "." + r.Label)
		for _, v := range r.Values {
			all[i].at = append(all[i].at, attrsOf(append(base[:len(base):len(base)], key.String(v))...))
		}
	}
	return func(o metric.Observer) {
		v := stats()
		for i, r := range k.Readings {
			for j, at := range all[i].at {
				o.ObserveInt64(all[i].inst, r.Read(v, j), at...)
			}
		}
	}
}

// attributes are those of every metric of a source of kind: its name, and
// its algorithm when the kind has one and the caller said it.
func (s *Source) attributes(kind string, algorithm bool) []attribute.KeyValue {
	kv := []attribute.KeyValue{attribute.Key(namespace + kind + ".name").String(s.name)}
	if algorithm && s.alg != "" {
		kv = append(kv, AlgorithmKey.String(s.alg))
	}
	return kv
}

// waitSource checks the name and options of a limiter's wait histogram
// (WaitProducer, WaitRecorder) and returns its attributes, a limiter's.
func waitSource(name string, opts []SourceOption) (attribute.Set, error) {
	s := Source{kind: "limiter", name: name}
	for _, o := range opts {
		if o != nil {
			o.apply(&s)
		}
	}
	if name == "" {
		return attribute.Set{}, invalid("a limiter needs a name, got \"\"")
	}
	return attribute.NewSet(s.attributes("limiter", true)...), nil
}

// attrs is an attribute set as the options of an observation, made once
// per source so that a collection allocates nothing for it.
type attrs []metric.ObserveOption

func attrsOf(kv ...attribute.KeyValue) attrs {
	return attrs{metric.WithAttributeSet(attribute.NewSet(kv...))}
}

func invalid(format string, args ...any) error {
	return configerr.Errorf("sluiceotel", format, args...)
}
