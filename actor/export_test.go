package actor

// Wakes returns how many times l's owner has woken, for tests that check
// that arrivals join a busy queue without waking it.
func Wakes(l *Limiter) int64 { return l.rt.wakes.Load() }

// LaneShadowed reports whether ln holds a shadow of the algorithm. Read it
// only once the owner has answered every call of ln.
func LaneShadowed(ln *Lane) bool { return ln.shadow.alg != nil }
