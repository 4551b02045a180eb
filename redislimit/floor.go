package redislimit

// A GCRA key's state can be lost while this process still holds what Redis
// gave it: FLUSHALL, a restart without persistence, an eviction, a
// failover to a replica that lagged. The next call then finds the key
// empty and starts the TAT from Redis's now, while reservations made
// seconds ahead are still granted here at their instants: 500 callers
// holding 5 s of reservations, then a FLUSHALL, were 1,118 grants against
// 621 allowed. So every call carries a floor, the end of the latest
// admission this process holds, and the script raises the TAT to it
// before deciding: Redis is never behind what this process was handed.
//
// What "holds" means decides both ways the floor can be wrong:
//
//   - Too low, and a lost key over-admits. So the floor counts every
//     admission Redis made for this process and that was not given back:
//     the reservations still ahead, those nobody here used (room not used
//     at its instant still filled the TAT), and those already granted,
//     whose span keeps counting until the TAT passes it.
//   - Too high, and the limiter under-admits: the floor would put back
//     into Redis what was given back. So a give-back lowers it: trailing
//     reservations given back leave the floor at the latest admission
//     still held, and a Refund at the one held before the refunded grant.
//
// An admission's end is the TAT right after it, which counts every
// admission before it on the key, of any process: the floor is never
// beyond the TAT the key holds while nothing is lost. A give-back applies
// only to the latest admissions on the key (the script checks that nothing
// was written since), so nobody's give-back can take the TAT below the end
// of an admission made before the giver's, which is all a floor counts.
// On a key that kept its state the floor changes nothing.
//
// A Keyed forgets a key it holds nothing for, and its floor with it; what
// it granted last on that key spans at most a burst beyond the grant's
// instant, so a loss after that costs at most one burst. A Limiter keeps
// its one key's floor for its lifetime.

// floor is what a key's calls carry: the instant, in Redis µs and ticks,
// that the TAT cannot be behind.
type floor struct {
	// own is the floor: the latest end among this process's admissions not
	// given back, those still in the key's slots and those in held.
	own pair
	// held is the latest end among the admissions that left the slots
	// without being given back (granted, or unused at their instant), and
	// prev is held before its latest raise: what a Refund of the admission
	// that raised it leaves.
	held, prev pair
}

// admitted takes in an admission ending at end.
func (f *floor) admitted(end pair) {
	if f.own.less(end) {
		f.own = end
	}
}

// leave takes in an admission ending at end that left the slots without
// being given back, so that the floor keeps it.
func (f *floor) leave(end pair) {
	f.admitted(end)
	if f.held.less(end) {
		f.prev, f.held = f.held, end
	}
}

// refunded takes in a Refund, applied, of the grant whose call left the
// TAT at end: the key's latest admission, so that if it raised held it is
// the admission held dropped back from.
func (f *floor) refunded(end pair) {
	if f.held == end {
		f.held = f.prev
	}
}

// floorAfterGiveBack sets the floor again after a give-back was applied:
// the latest end among the slots left and held.
func (ks *keyState) floorAfterGiveBack() {
	ks.floor.own = ks.floor.held
	for _, s := range ks.slots {
		ks.floor.admitted(s.end)
	}
}

// floorAt is the floor a call of the key sends at the local instant now:
// none (the zero pair) when it is surely in Redis's past, where it changes
// nothing (the script reads a TAT in the past as now). Redis's now is then
// at least now less the offset the key's latest call measured, which
// counts that call's round trip as Redis's time: an estimate never ahead.
// A lone caller then sends the arguments it sent before (loneArgs) rather
// than new ones, four allocations per call.
func (ks *keyState) floorAt(now int64) pair {
	own := ks.floor.own
	if ks.off != 0 {
		if redisNow, _ := floorDivMod(now-ks.off, 1000); own.w < redisNow {
			return pair{}
		}
	}
	return own
}

// floorArg is the batch script's floor argument for the key at the local
// instant now: two packed float64s, or "" for none.
func (ks *keyState) floorArg(now int64) string {
	fl := ks.floorAt(now)
	if fl == (pair{}) {
		return ""
	}
	return packFloats(fl.w, fl.f)
}

// less reports whether a is before b.
func (a pair) less(b pair) bool { return a.w < b.w || a.w == b.w && a.f < b.f }
