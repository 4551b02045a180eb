package owner

// Status is a call's answer. The core knows the ones every owner shares;
// a plug-in numbers its own from Custom.
type Status uint8

const (
	Pending  Status = iota // not answered (a pooled call's status is reset to it)
	Granted                // the request was granted
	Limited                // refused; the plug-in says for how long
	Deadline               // refused: the deadline falls before the grant
	Closed                 // the owner was closed
	Canceled               // the caller gave up and the owner took the call back
	Custom                 // the first status a plug-in may define
)

// Call is the part of one caller's round trip that the core handles: its
// links in the inbox, its reply channel and its status. A plug-in embeds
// it in its own call and points Self at it, so that the owner finds the
// plug-in's call with no conversion.
//
// The owner writes the status (and whatever the plug-in's call carries)
// before it signals Reply; the caller reads it after.
type Call[C any] struct {
	Self C
	// Reply has capacity 2: the answer, and a cancellation's
	// acknowledgement.
	Reply  chan struct{}
	Status Status
	// CancelAt is the caller's clock when it gave up, ns on the timeline.
	CancelAt int64
	// Units is what the request would queue for, if it must wait (an
	// Acquire's cost; 0 for a request that never queues): the inbox counts
	// the units it holds, for predictions that must see requests the owner
	// has not taken yet (Owner.Queued).
	Units int64

	next       *Call[C] // the inbox's link
	cancelNext *Call[C] // the cancellation stack's link
	inBatch    bool     // owner: taken in the batch being served, not yet handled
	cancelled  bool     // owner: its cancellation came in the same batch
}

// Init makes c ready for its first round trip, as self's core.
func (c *Call[C]) Init(self C) {
	c.Self = self
	c.Reply = make(chan struct{}, 2)
}

// Signal tells c's caller that its answer, or the acknowledgement of its
// cancellation, is written.
func (c *Call[C]) Signal() { c.Reply <- struct{}{} }

// Next is the call taken after c, in arrival order, in the list Shutdown
// is given.
func (c *Call[C]) Next() *Call[C] { return c.next }
