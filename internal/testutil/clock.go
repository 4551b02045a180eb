// Package testutil holds what several packages' tests share.
package testutil

import (
	"sync/atomic"
	"time"
)

// Epoch is where Clock starts: 2000-01-01 UTC, the instant a
// testing/synctest bubble starts at, so that tests can mix the two.
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Clock is a clock a test moves by hand, for the cases synctest cannot
// show: it may go backwards. Its zero value reads Epoch. Safe for
// concurrent use.
type Clock struct{ offset atomic.Int64 }

// Now returns Epoch plus the offset set so far.
func (c *Clock) Now() time.Time { return Epoch.Add(time.Duration(c.offset.Load())) }

// Set puts the clock at d after Epoch, earlier than before if d is smaller.
func (c *Clock) Set(d time.Duration) { c.offset.Store(int64(d)) }

// Advance moves the clock by d (backwards if d < 0).
func (c *Clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }
