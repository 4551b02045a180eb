// Package spec is the simulator's grammar for a limit: which of the five
// algorithms of package algorithms, at which rate, with which burst or
// capacity.
//
//	limit = kind ":" arg { "," arg }
//	kind  = "gcra" | "token" | "leaky" | "sliding" | "fixed"
//	arg   = RATE | SIZE | name "=" value
//
// RATE is algorithms.ParseRate's COUNT/PERIOD ("100/s", "100/1m",
// "5/200ms"); SIZE is a whole number. Positional arguments are told apart by
// their shape (a rate has a slash, a size does not), so their order does not
// matter, and every argument may be named instead:
//
//	gcra:100/s              GCRA at 100 per second, burst 1 (strict pacing)
//	gcra:100/s,burst=10     GCRA with bursts of up to 10
//	token:50,1/s            token bucket of capacity 50, refilled at 1 per second
//	token:rate=1/s,capacity=50
//	leaky:2/s,40            leaky bucket of capacity 40 draining at 2 per second
//	sliding:100/1m          at most 100 in any minute
//	fixed:100/1m            at most 100 in each calendar minute
//
// The names are rate (every kind), burst (gcra only) and capacity (token and
// leaky only). gcra's burst defaults to 1; token and leaky need a capacity;
// the windows take a rate only, whose count is the limit per period. Kinds and
// names are case-insensitive and spaces around the pieces are ignored.
// Limit.String gives the canonical form, which Parse reads back.
//
// For sluice simulate -downstream, ParseAdaptive reads a concurrency limit
// (adaptive:vegas,floor=1,ceiling=200, or pool:100, static) and
// ParseDownstream the modelled downstream
// (servers=100,service=10ms±1ms,queue=10,at=30s:servers=40), each with its
// canonical form (Adaptive.String, FormatDownstream) that reads back.
//
// Nothing here is shared between goroutines: a Limit is a value, safe for
// concurrent use, and every call to New returns a fresh algorithm.
package spec
