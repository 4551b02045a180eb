package actor

// Wakes returns how many times l's owner has woken, for tests that check
// that arrivals join a busy queue without waking it.
func Wakes(l *Limiter) int64 { return l.rt.wakes.Load() }
