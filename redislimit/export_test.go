package redislimit

// WithServerClock makes the script decide at now() µs instead of reading
// Redis TIME, so that a test in a testing/synctest bubble runs Redis on
// the bubble's clock.
func WithServerClock(now func() int64) Option {
	return optionFunc(func(c *config) { c.serverNow = now })
}

// WithBeforeCall runs f on the caller goroutine before each batch is sent,
// so that a test can hold a call while it acts.
func WithBeforeCall(f func()) Option {
	return optionFunc(func(c *config) { c.beforeCall = f })
}

// Script and ScriptSHA are the batch script (lua/gcra.lua) and its SHA1,
// for the tests that run it directly.
var Script, ScriptSHA = gcraSource, gcraScript.Hash()

// LeanScript and LeanScriptSHA are the one-request script and its SHA1.
var LeanScript, LeanScriptSHA = leanSource, leanScript.Hash()

// LeanArgs packs the lean script's argument: C, tau (whole µs, ticks), the
// instant (0: TIME), maxwait, and the cost's span (whole µs, ticks).
var LeanArgs = packLean

// WindowScript and WindowScriptSHA are the window script and its SHA1.
var WindowScript, WindowScriptSHA = windowSource, windowScript.Hash()

// WithGrantHook tells f, on the owner goroutine, of every grant through
// Redis that its caller got: the instant Redis admitted its slot at, in
// µs, and its cost.
func WithGrantHook(f func(redisMicros, cost int64)) Option {
	return optionFunc(func(c *config) { c.onGrant = f })
}

// WithBeforeGrant runs f, on the owner goroutine, just before it answers
// a waiter whose reservation fell due, for tests that race that answer.
func WithBeforeGrant(f func(cost int64)) Option {
	return optionFunc(func(c *config) { c.beforeGrant = f })
}

// PackValue is a GCRA key's value W, F, N, M as the scripts store it.
var PackValue = packValue

// ValueKey is the part of a value, W, F and N, that the batch script's
// give-back compares: its first 24 bytes.
func ValueKey(w, f, n int64) string { return ident{w: w, f: f, n: n, ok: true}.key() }

// CallsInside returns how many of l's script calls are inside go-redis,
// for a Limiter on a plain client (its one node).
func CallsInside(l *Limiter) int { return int(l.e.node0.inCall.Load()) }

// KeySlot is the Cluster hash slot of a key (replay.go).
var KeySlot = slotOf

// SlotsLoaded reports whether k's engine has its Cluster client's map of
// the slots, so that it batches per master (false for a plain client).
func SlotsLoaded(k *Keyed) bool { return k.e.router != nil && k.e.router.ready.Load() }
