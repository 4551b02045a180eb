// Package downstream is a model of a service that serves requests, for the
// adaptive pool's runnable example (examples/adaptive) and for sluice
// simulate -downstream: c servers, each serving one request at a time for
// a service time drawn from a distribution, a FIFO queue in front of them,
// and an Overload refusal (a 503) for a request that finds the queue full.
// Its capacity C is c: up to c in flight, latency does not rise. The
// capacity and the service time may change at given instants (Phase).
//
// In front of it stands a pool that sheds its load, as a server's
// AdaptivePool with WithoutQueue does: an arrival it cannot admit under its
// limit is refused at once. The pool is a model of actor.AdaptivePool run
// on a virtual clock, with the real controllers (actor.AIMD, actor.Vegas,
// actor.Gradient2) making its decisions: samples gather for a millisecond
// from the first, as the real owner's do, then the controller sees each
// one in order and the pool clamps its answer to [floor, ceiling]. What it
// leaves out: the real pool samples the latency of one grant in a stride
// when it is busy (above 64 samples a millisecond), and its owner's
// goroutine may be late; here every latency counts and nothing is late, so
// a run is deterministic for a seed. A pool without a controller is a
// static limit, the baseline.
//
// A Model reads no clock and starts no goroutine: the caller offers
// arrivals in order of instant and reads the Result. It is not safe for
// concurrent use; separate models share nothing.
//
// The package is internal: the example and the simulator import it, the
// library does not export it.
package downstream
