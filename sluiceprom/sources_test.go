package sluiceprom_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/sluiceprom"
)

var errDown = errors.New("down")

// everySource returns a Collector of one source of every kind, after a
// timeline that moves every figure off zero: a pool holding 2 of 3 (with
// a wait histogram), a
// keyed limiter with 2 keys and a refusal, a breaker that opened, a
// budget that refused a retry. Call it inside a synctest bubble.
func everySource(t *testing.T) *sluiceprom.Collector {
	var waits permits.WaitHistogram
	pool, err := actor.NewPool(3, actor.WithObserver(&waits))
	must(t, err)
	t.Cleanup(func() { pool.Close() })
	if _, err := pool.Acquire(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	perIP, err := keyed.NewGCRA[string](algorithms.PerSecond(1), 1)
	must(t, err)
	t.Cleanup(func() { perIP.Close() })
	for _, ip := range []string{"192.0.2.1", "192.0.2.2", "192.0.2.1"} {
		_, _ = perIP.TryAcquire(ip, 1) // the second try of .1 is refused
	}
	br, err := breaker.New(breaker.WithName("upstream"), breaker.WithConsecutiveFailures(1))
	must(t, err)
	_ = br.Do(t.Context(), func(context.Context) error { return errDown })
	b, err := budget.New(budget.WithName("retries"), budget.WithMinRetriesPerSec(0), budget.WithTTL(time.Second))
	must(t, err)
	for range 10 {
		b.Deposit() // 20% of 10: two retries
	}
	for range 3 {
		b.TryWithdraw() // the third is refused
	}
	c, err := sluiceprom.NewCollector(
		sluiceprom.Pool("db", pool.Stats, sluiceprom.Waits(&waits)),
		sluiceprom.Keyed("per-ip", perIP.Stats, sluiceprom.Algorithm("GCRA")),
		sluiceprom.Breaker(br.Snapshot),
		sluiceprom.Budget(b.Stats),
	)
	must(t, err)
	return c
}

// Every kind of source, scraped: the pool's usage and limit, the keyed
// limiter's keys (never a key), the breaker's state and transitions, the
// budget's window. A limiter without Algorithm has an empty algorithm
// label, which Prometheus treats as absent.
func TestEveryKindOfSourceIsScrapedExactly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := everySource(t)
		compare(t, c, `
# HELP sluice_breaker_state 1 for the breaker's current state, 0 for the others.
# TYPE sluice_breaker_state gauge
sluice_breaker_state{name="upstream",state="closed"} 0
sluice_breaker_state{name="upstream",state="half-open"} 0
sluice_breaker_state{name="upstream",state="open"} 1
# HELP sluice_breaker_transitions_total Changes of state since the breaker was made.
# TYPE sluice_breaker_transitions_total counter
sluice_breaker_transitions_total{name="upstream"} 1
# HELP sluice_budget_balance Retries the budget would allow now.
# TYPE sluice_budget_balance gauge
sluice_budget_balance{name="retries"} 0
# HELP sluice_budget_deposits Requests deposited in the budget's window.
# TYPE sluice_budget_deposits gauge
sluice_budget_deposits{name="retries"} 10
# HELP sluice_budget_refusals Retries refused in the budget's window.
# TYPE sluice_budget_refusals gauge
sluice_budget_refusals{name="retries"} 1
# HELP sluice_budget_withdrawals Retries withdrawn in the budget's window.
# TYPE sluice_budget_withdrawals gauge
sluice_budget_withdrawals{name="retries"} 2
# HELP sluice_limiter_granted_total Permits granted since the limiter was made.
# TYPE sluice_limiter_granted_total counter
sluice_limiter_granted_total{algorithm="",name="db"} 1
sluice_limiter_granted_total{algorithm="GCRA",name="per-ip"} 2
# HELP sluice_limiter_keys Keys a keyed limiter holds now.
# TYPE sluice_limiter_keys gauge
sluice_limiter_keys{algorithm="GCRA",name="per-ip"} 2
# HELP sluice_limiter_rejected_total Requests refused (ErrRateLimited, or Allow's false).
# TYPE sluice_limiter_rejected_total counter
sluice_limiter_rejected_total{algorithm="",name="db"} 0
sluice_limiter_rejected_total{algorithm="GCRA",name="per-ip"} 1
# HELP sluice_pool_limit Cost units a pool holds at most.
# TYPE sluice_pool_limit gauge
sluice_pool_limit{algorithm="",name="db"} 3
# HELP sluice_pool_usage Cost units a pool holds now.
# TYPE sluice_pool_usage gauge
sluice_pool_usage{algorithm="",name="db"} 2
`, "sluice_breaker_state", "sluice_breaker_transitions_total", "sluice_budget_balance",
			"sluice_budget_deposits", "sluice_budget_refusals", "sluice_budget_withdrawals",
			"sluice_limiter_granted_total", "sluice_limiter_keys", "sluice_limiter_rejected_total",
			"sluice_pool_limit", "sluice_pool_usage")
	})
}

// A source is read when Prometheus scrapes, once per scrape, and never
// otherwise.
func TestSourcesAreReadOnlyWhenScraped(t *testing.T) {
	var reads int
	c, err := sluiceprom.NewCollector(sluiceprom.Limiter("api", func() permits.Stats { reads++; return permits.Stats{} }))
	must(t, err)
	reg := prometheus.NewPedanticRegistry()
	must(t, reg.Register(c))
	if reads != 0 {
		t.Fatalf("registering read the source %d times", reads)
	}
	for want := 1; want <= 3; want++ {
		_, err := reg.Gather()
		must(t, err)
		if reads != want {
			t.Fatalf("after %d scrapes the source was read %d times", want, reads)
		}
	}
}

func ok0() permits.Stats { return permits.Stats{} }

// Bad input is an error matching permits.ErrInvalidConfig, never a panic.
func TestBadSourcesAreConfigurationErrors(t *testing.T) {
	br, _ := breaker.New()
	b, _ := budget.New()
	ok := sluiceprom.Limiter("ok", ok0)
	cases := map[string][]sluiceprom.Source{
		"no sources":            nil,
		"an empty name":         {sluiceprom.Limiter("", ok0)},
		"a nil stats":           {sluiceprom.Limiter("api", nil)},
		"a nil keyed stats":     {sluiceprom.Keyed("api", (func() keyed.Stats)(nil))},
		"a nil pool stats":      {sluiceprom.Pool("api", (func() actor.PoolStats)(nil))},
		"a nil snapshot":        {sluiceprom.Breaker(nil)},
		"a nil budget stats":    {sluiceprom.Budget(nil)},
		"a zero Source":         {{}},
		"two limiters named ok": {ok, ok},
		"a pool named as one":   {ok, sluiceprom.Pool("ok", func() actor.PoolStats { return actor.PoolStats{} })},
		"two unnamed breakers":  {sluiceprom.Breaker(br.Snapshot), sluiceprom.Breaker(br.Snapshot)},
		"two unnamed budgets":   {sluiceprom.Budget(b.Stats), sluiceprom.Budget(b.Stats)},
	}
	for name, sources := range cases {
		c, err := sluiceprom.NewCollector(sources...)
		if !errors.Is(err, permits.ErrInvalidConfig) || c != nil {
			t.Errorf("%s: got %v, %v; want an error matching ErrInvalidConfig", name, c, err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Two Collectors register side by side in one registry; a second source
// of a name already registered is refused there, as any duplicate series.
func TestCollectorsRegisterSideBySideUnlessTheirNamesClash(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	for _, name := range []string{"a", "b"} {
		c, err := sluiceprom.NewCollector(sluiceprom.Limiter(name, ok0))
		must(t, err)
		must(t, reg.Register(c))
	}
	again, err := sluiceprom.NewCollector(sluiceprom.Limiter("a", ok0))
	must(t, err)
	if err := reg.Register(again); err == nil {
		t.Error("a second Collector of limiter a was registered")
	}
	families, err := reg.Gather()
	must(t, err)
	if n := len(families[0].GetMetric()); n != 2 {
		t.Errorf("%s has %d series, want 2", families[0].GetName(), n)
	}
}
