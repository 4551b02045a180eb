package algorithms

// SlidingRing returns the number of entries w's ring can hold, for tests of
// its memory.
func SlidingRing(w *SlidingWindow) int { return len(w.events) }
