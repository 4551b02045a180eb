// Package scheduler is the pure waiting order of a limiter: a FIFO queue of
// waiters in virtual time (Queue) that tells its owner which waiters are due
// and when to wake next, and the same in lanes (Fair): flows with weights
// and priority classes, granted by weighted fair queueing on cost
// (docs/fairness.md has the maths).
//
// Instants are int64 nanoseconds on the owner's timeline; the package never
// reads a clock, starts a goroutine or locks. A Queue is owned by one
// goroutine (package actor) and is not safe for concurrent use; so is a Fair.
//
// Each grant is stamped with its scheduled instant: the latest of the
// previous grant's scheduled instant, the waiter's arrival, and the instant
// the owner's decision said it could pass. The owner decides at that
// instant, not at the instant it happened to wake up, so a late timer never
// lowers the achieved rate.
package scheduler
