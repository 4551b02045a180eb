package permits

// Stats is the counters every limiter of sluice keeps, one shape for
// actor, keyed and redislimit (whose Stats add what is theirs to it). Each
// counter is updated before the call it counts returns, so that once a
// caller has its answer the counters include it; they are read one by
// one, not as one atomic snapshot.
type Stats struct {
	// Granted counts permits granted since the limiter was made.
	Granted uint64
	// Rejected counts refusals returned to a caller (an error matching
	// ErrRateLimited, or Allow's false). The tries All makes on its own
	// behalf, to learn which rate makes a request wait, are not counted.
	Rejected uint64
	// Refunded counts grants given back unused by Refund (a Refund that
	// reported true). A grant refunded is also counted in Granted: the
	// permits kept are Granted − Refunded.
	Refunded uint64
	// Canceled counts waiters whose context ended while they waited.
	Canceled uint64
	// Waiting is the number of Acquires waiting for their answer now.
	Waiting int
}
