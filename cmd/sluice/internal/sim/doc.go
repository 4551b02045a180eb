// Package sim offers one timeline of arrivals to limits on a virtual clock
// and measures what each admits, refuses and delays.
//
// It models actor.Limiter, the library's real limiter, with the same pure
// parts the real owner runs: the algorithm from package algorithms decides,
// and a scheduler.Queue orders the waiters, strictly FIFO, granting each head
// at its scheduled instant (never before the instant its algorithm said it
// could pass). A caller that finds nobody waiting is decided at once; one
// that would have to wait is refused at once when its predicted grant is
// later than MaxWait after its arrival, which is what WithMaxWait does, and
// the prediction is made the way the real owner makes it (a "shadow" copy of
// the algorithm with every queued waiter already admitted). Otherwise it
// joins the queue and is granted when its turn and the rate allow.
//
// What the model leaves out: the real owner's timer can fire late and its
// goroutine can be slow, which delays a grant's delivery (never its
// scheduled instant, so never the rate); callers here do not cancel and have
// no context deadline beyond MaxWait; and arrivals at one instant form one
// batch, after every grant due at or before that instant. docs/simulator.md
// says more.
//
// The virtual clock starts at Start, and instants are offsets from it. A run
// reads no clock and starts no goroutine; RunAll runs limits side by side on
// goroutines of its own and waits for them. Results are values owned by the
// caller; nothing here is shared between runs, so separate calls are safe
// for concurrent use.
package sim
