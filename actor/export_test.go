package actor

// Wakes returns how many times l's owner has woken, for tests that check
// that arrivals join a busy queue without waking it.
func Wakes(l *Limiter) int64 { return l.rt.o.Wakes() }

// SetParkHook makes the owner of l (a *Limiter or a *Pool) call f, on its
// own goroutine, each time it is about to park, with the length of its
// queue.
func SetParkHook(l any, f func(queued int)) {
	var r *runtime
	switch l := l.(type) {
	case *Limiter:
		r = l.rt
	case *Pool:
		r = l.rt
	}
	r.o.SetParkHook(func() { f(r.queueLen()) })
}

// InboxDepth returns how many requests wait in l's inbox, not yet taken.
func InboxDepth(l *Limiter) int {
	return l.rt.o.Depth()
}

// LaneShadowed reports whether ln holds a shadow of the algorithm. Read it
// only once the owner has answered every call of ln.
func LaneShadowed(ln *Lane) bool { return ln.shadow.alg != nil }
