// Package sim offers one timeline of arrivals to limits on a virtual clock
// and measures what each admits, refuses and delays.
//
// It models actor.Limiter, the library's real limiter, with the pure part
// the real owner runs, the algorithm from package algorithms, and the real
// owner's rule for waiters: strictly FIFO, each granted at its scheduled
// instant (the later of the grant before it and its arrival, and never
// before the instant its algorithm said it could pass). A caller that finds
// nobody waiting is decided at once; one that would have to wait is refused
// at once when its grant would come later than MaxWait after its arrival,
// which is what WithMaxWait does. Otherwise its grant is reserved for that
// instant. With nothing that leaves a queue early (no cancellations here),
// deciding each waiter on arrival is the same as the real owner's queue and
// its predictions: the same decisions in the same order at the same
// instants, at about half the cost. A test holds the model to the real
// limiter run in a synctest bubble, grant for grant.
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
