package actor

// Wakes returns how many times l's owner has woken, for tests that check
// that arrivals join a busy queue without waking it.
func Wakes(l *Limiter) int64 { return l.rt.wakes.Load() }

// SetParkHook makes the owner of l (a *Limiter or a *Pool) call f, on its
// own goroutine, each time it is about to park, with the length of its
// queue.
func SetParkHook(l any, f func(queued int)) {
	switch l := l.(type) {
	case *Limiter:
		l.rt.hookPk.Store(&f)
	case *Pool:
		l.rt.hookPk.Store(&f)
	}
}

// InboxDepth returns how many requests wait in l's inbox, not yet taken.
func InboxDepth(l *Limiter) int {
	n := 0
	for c := l.rt.inbox.Load(); c != nil; c = c.next {
		n++
	}
	return n
}

// LaneShadowed reports whether ln holds a shadow of the algorithm. Read it
// only once the owner has answered every call of ln.
func LaneShadowed(ln *Lane) bool { return ln.shadow.alg != nil }
