// Package muldiv is the simulator's 128-bit integer arithmetic: products
// of rates, instants and counts that may not fit in 64 bits before they are
// divided. Every function saturates at MaxInt64 rather than wrapping. They
// are pure and safe for concurrent use.
package muldiv
