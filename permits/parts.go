package permits

// Each calls fn with every limiter lim is made of: the parts of All, what
// FixedCost and MaxWait wrap, recursively, down to the limiters that are
// none of these (an actor.Limiter, an actor.Pool, a limiter of your own).
// A limiter that is none of them is its only part. fn sees the parts in
// the order All was given them, once per place each stands in.
//
// It is how code given one Limiter finds what it can do beyond Acquire: an
// HTTP client that is told to back off pauses every part that has a Pause
// method, whatever All or wrapper holds it (package httplimit's
// Transport). A nil lim has no parts. Each only reads what All and the
// wrappers were made with, which never changes: it is safe for concurrent
// use, with fn's own safety.
func Each(lim Limiter, fn func(Limiter)) {
	switch l := lim.(type) {
	case nil:
	case *all:
		for _, p := range l.parts {
			Each(p.lim, fn)
		}
	case *fixedCost:
		Each(l.lim, fn)
	case maxWait:
		Each(l.lim, fn)
	case maxWaitRefunder:
		Each(l.lim, fn)
	case maxWaitSettler:
		Each(l.lim, fn)
	default:
		fn(lim)
	}
}
