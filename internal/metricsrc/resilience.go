package metricsrc

import (
	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/httplimit"
)

// Breaker is a circuit breaker (its Snapshot): its state as one series
// per state, 1 for the current one, and its transitions.
var Breaker = &Kind[breaker.Snapshot]{Name: "breaker", NameOf: func(s breaker.Snapshot) string { return s.Name },
	Readings: []Reading[breaker.Snapshot]{{
		Metric: Metric{Name: "sluice.breaker.state", Unit: "{breaker}", Instrument: Gauge,
			Desc:  "1 for the breaker's current state, 0 for the others.",
			Label: "state", Values: []string{breaker.Closed.String(), breaker.Open.String(), breaker.HalfOpen.String()}},
		Read: func(s breaker.Snapshot, i int) int64 { return boolInt(s.State == breaker.State(i)) },
	},
		plain("sluice.breaker.transitions", "{transition}", Counter, "Changes of state since the breaker was made.",
			func(s breaker.Snapshot) int64 { return s.Transitions }),
	}}

// Budget is a retry budget (its Stats): gauges, not counters, since they
// count the budget's window and fall as events leave it.
var Budget = &Kind[budget.Stats]{Name: "budget", NameOf: func(s budget.Stats) string { return s.Name },
	Readings: []Reading[budget.Stats]{
		plain("sluice.budget.balance", "{retry}", Gauge, "Retries the budget would allow now.",
			func(s budget.Stats) int64 { return s.Balance }),
		plain("sluice.budget.deposits", "{request}", Gauge, "Requests deposited in the budget's window.",
			func(s budget.Stats) int64 { return s.Deposits }),
		plain("sluice.budget.withdrawals", "{retry}", Gauge, "Retries withdrawn in the budget's window.",
			func(s budget.Stats) int64 { return s.Withdrawals }),
		plain("sluice.budget.refusals", "{retry}", Gauge, "Retries refused in the budget's window.",
			func(s budget.Stats) int64 { return s.Refusals }),
	}}

// Transport is an httplimit.Transport (its Stats): its counters, pauses
// by the status that asked, responses by class, and the hosts paused now.
var Transport = &Kind[httplimit.TransportStats]{Name: "transport", Readings: []Reading[httplimit.TransportStats]{
	transport("requests", "{request}", "RoundTrip calls since the Transport was made.",
		func(s httplimit.TransportStats) int64 { return s.Requests }),
	transport("attempts", "{attempt}", "Requests sent through the base RoundTripper, retries included.",
		func(s httplimit.TransportStats) int64 { return s.Attempts }),
	transport("paced", "{attempt}", "Attempts that waited for their host's pause, the limiter or their host's pool.",
		func(s httplimit.TransportStats) int64 { return s.Paced }),
	transport("retries", "{retry}", "Retries decided.",
		func(s httplimit.TransportStats) int64 { return s.Retries }),
	transport("refused_retries", "{retry}", "Retries the retry budget refused.",
		func(s httplimit.TransportStats) int64 { return s.RefusedRetries }),
	transport("breaker_rejected", "{attempt}", "Attempts the circuit breaker refused, never sent.",
		func(s httplimit.TransportStats) int64 { return s.BreakerRejected }),
	{Metric: Metric{Name: "sluice.transport.pauses", Unit: "{pause}", Instrument: Counter,
		Desc: "Pauses of a host started, by the status that asked.", Label: "reason", Values: []string{"429", "503", "other"}},
		Read: func(s httplimit.TransportStats, i int) int64 {
			return [...]int64{s.PausesStarted.TooManyRequests, s.PausesStarted.ServiceUnavailable, s.PausesStarted.Other}[i]
		}},
	{Metric: Metric{Name: "sluice.transport.responses", Unit: "{response}", Instrument: Counter,
		Desc: "Responses received, retried ones included, by class.", Label: "class",
		Values: []string{"1xx", "2xx", "3xx", "4xx", "5xx", "other"}},
		Read: func(s httplimit.TransportStats, i int) int64 { return s.Responses[(i+1)%len(s.Responses)] }},
	plain("sluice.transport.paused_hosts", "{host}", UpDown, "Hosts paused now.",
		func(s httplimit.TransportStats) int64 { return s.PausedHosts }),
}}

func transport(what, unit, desc string, read func(httplimit.TransportStats) int64) Reading[httplimit.TransportStats] {
	return plain("sluice.transport."+what, unit, Counter, desc, read)
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
