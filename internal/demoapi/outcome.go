package demoapi

import "time"

// Outcome is what a run of either demo did against the API, as its summary
// reports it against the goals.
type Outcome struct {
	Stats                             // the API's own counts
	Failed                    int     // jobs that never got an answer
	Overload                  bool    // the API was overloaded for a while
	QuotaUsed, RequestUse     float64 // QuotaUse's shares
	Steady                    time.Duration
	TokenLimit                int64 // the API's tokens per window
	RPS                       int   // the API's requests per second
	Elapsed, WaitP50, WaitP99 time.Duration
}

// PrintResults writes the lines both demos' summaries share, from the 429s
// to the waits, with pr (a Printf that ends the line).
func PrintResults(pr func(format string, args ...any), o Outcome) {
	pr("  429s, quota      %d  (goal: 0)", o.QuotaRefused)
	if o.Overload {
		pr("  429s, overload   %d, absorbed: %d retried after their Retry-After, %d before it, %d lost  (goal: all after, none lost)",
			o.OverloadRefused, o.RetriedInTime, o.RetriedEarly, o.NeverRetried+o.Failed)
	}
	pr("  token quota      %.1f%% used  (goal: >= 95%%): the API's window held %s of its %s on average over the %.1fs outside the overload",
		100*o.QuotaUsed, Grouped(int64(o.QuotaUsed*float64(o.TokenLimit))), Grouped(o.TokenLimit), o.Steady.Seconds())
	pr("  tokens           %s used of %s estimated (%.0f%%); at most %s in the API's window at once  (limit %s)",
		Grouped(o.TokensUsed), Grouped(o.TokensEstimated), 100*float64(o.TokensUsed)/float64(max(o.TokensEstimated, 1)),
		Grouped(o.PeakTokens), Grouped(o.TokenLimit))
	pr("  requests/s       %.1f on average, %d at most in any 1 s  (limit %d)", float64(o.Accepted)/o.Elapsed.Seconds(), o.PeakRequests, o.RPS)
	pr("  bound by         %s", Binding(o.QuotaUsed, o.RequestUse))
	pr("  wait p50 / p99   %v / %v  (from a job's start to the send that succeeded: queue, pauses and retries)",
		o.WaitP50.Round(time.Millisecond), o.WaitP99.Round(time.Millisecond))
}
