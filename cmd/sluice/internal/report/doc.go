// Package report prints the simulator's results as plain-text tables: one
// row per limit with what it admitted, refused and delayed, the most it
// admitted in any window of the upstream's size, and whether the upstream
// would have refused any of it.
//
// The output is a pure function of its input (no clock, no map order), so
// that golden files can hold it. Its functions share no state and are safe
// for concurrent use.
package report
