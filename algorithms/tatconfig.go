package algorithms

import (
	"math/big"
	"time"
)

// reconfigure changes the rate and the burst at now (owner only), keeping
// what was already admitted: the units still owed (the TAT's distance ahead
// of now, in units) stay owed, and are paid at the new rate; nothing
// granted is taken back, and the burst is the new one from now on. The new
// configuration is published as a new generation, so fast-path callers see
// it atomically. Receipts made before give nothing back afterwards.
func (c *tatCore) reconfigure(now time.Time, rate Rate, burst int64, what string) error {
	old := c.ep.Load()
	cfg, err := newTATConfig(rate, burst, what, old.version+1)
	if err != nil {
		return err
	}
	for {
		e, w, owed, ok := c.owed(now, old)
		if !ok {
			old = c.ep.Load()
			continue
		}
		old = e
		// The same units in new ticks, rounded up: owed·per'/per.
		x := new(big.Int).Mul(owed, big.NewInt(cfg.per))
		q, r := new(big.Int).QuoRem(x, big.NewInt(old.per), new(big.Int))
		if r.Sign() > 0 {
			q.Add(q, big.NewInt(1))
		}
		next := &tatEpoch{tatConfig: cfg, gen: old.gen + 1}
		if cfg.word && c.toWord(now, old, w, next, q) || !cfg.word && c.toWide(now, old, w, next, q) {
			return nil
		}
	}
}

// owed returns the units the TAT lies ahead of now, in the ticks of the
// epoch it read them in, with that epoch and, in the word form, the word;
// ok is false when the epoch changed under the read.
func (c *tatCore) owed(now time.Time, old *tatEpoch) (e *tatEpoch, w uint64, owed *big.Int, ok bool) {
	if old.word {
		e, word, n, _, ok := c.load(now, false)
		if !ok {
			return nil, 0, nil, false
		}
		return e, word, big.NewInt(max(int64(word&tickMask)-n, 0)), true
	}
	n := fixed{c.wide.now(now), 0}
	owed = new(big.Int)
	if n.less(c.wide.tat) {
		d := c.wide.tat.sub(n, c.wide.den)
		owed.Mul(big.NewInt(d.whole), big.NewInt(old.count))
		owed.Add(owed, big.NewInt(d.num))
	}
	return old, 0, owed, true
}

// toWord installs next, a word-form epoch, with q new ticks owed from now;
// false when the word changed since it was read as w (start again).
func (c *tatCore) toWord(now time.Time, old *tatEpoch, w uint64, next *tatEpoch, q *big.Int) bool {
	next.origin = now.Add(-time.Duration(next.nMaxNs / 2))
	n := next.nMaxNs / 2 * next.count
	next.last.Store(n)
	tat := int64(tickMask)
	if q.IsInt64() && q.Int64() < tickMask-n {
		tat = n + q.Int64()
	}
	// The gate stays closed if it was, and closes coming from the wide
	// form: the owner reopens it once it has no waiters.
	nw := (next.gen&3)<<genShift | uint64(tat)
	if !old.word || w&gateBit != 0 {
		nw |= gateBit
	}
	if old.word && !c.state.CompareAndSwap(w, nw) {
		return false
	}
	if !old.word {
		c.state.Store(nw)
	}
	c.wide = nil
	c.ep.Store(next)
	return true
}

// toWide installs next, a wide-form epoch: a fresh timeline at now, q new
// ticks owed. A word-form caller still holding the old epoch finds a new
// generation and the gate closed, and the new epoch says there is no word
// any more. False when the word changed since it was read as w.
func (c *tatCore) toWide(now time.Time, old *tatEpoch, w uint64, next *tatEpoch, q *big.Int) bool {
	wide := newWideTAT(next.tatConfig)
	wide.now(now)
	whole, num := new(big.Int).QuoRem(q, big.NewInt(next.count), new(big.Int))
	if whole.IsInt64() && whole.Int64() < farInstant {
		wide.tat = fixed{whole.Int64(), num.Int64()}
	} else {
		wide.tat = fixed{farInstant, 0}
	}
	next.origin = now
	if old.word && !c.state.CompareAndSwap(w, gateBit|(next.gen&3)<<genShift|w&tickMask) {
		return false
	}
	c.wide = wide
	c.ep.Store(next)
	return true
}
