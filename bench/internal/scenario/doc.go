// Package scenario holds what the side-by-side benchmarks share: the
// subjects (sluice and the libraries users would pick instead, behind small
// adapters), the reference implementations that mark the physical limits (a
// bare CAS on a theoretical arrival time, a bare mailbox round trip), the
// runners that time them, and the pure checks applied to what they record
// (conformance to b + floor(r·d), FIFO order).
//
// It is used by cmd/compare, which interleaves the subjects and prints the
// tables, and by the ordinary benchmarks in package bench, so that `go test
// -bench` and benchstat measure the same bodies.
package scenario
