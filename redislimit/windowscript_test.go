package redislimit_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// wscript runs the window script on key as a Window would, with limit l
// and window w µs, deciding at now.
type wscript struct {
	t    *testing.T
	c    *redis.Client
	key  string
	l, w int64
}

type wreply struct {
	now, epoch, first     int64
	hold                  int64
	settles, moves, codes []int64
}

func (s wscript) run(now int64, settles, moves string, reqs []wreq, hold int64) wreply {
	s.t.Helper()
	var b strings.Builder
	for i, r := range reqs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d:%d", r.cost, r.maxWait)
	}
	args := []any{s.l, s.w, now, settles, b.String(), moves, hold}
	// The test drives the window's clock, not Redis's: the key must not
	// expire on Redis's between two calls, so each call drops the expiry
	// it set, in one transaction.
	ctx := context.Background()
	require.NoError(s.t, s.c.ScriptLoad(ctx, redislimit.WindowScript).Err())
	var cmd *redis.Cmd
	_, err := s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		cmd = p.EvalSha(ctx, redislimit.WindowScriptSHA, []string{s.key}, args...)
		p.Persist(ctx, s.key)
		return nil
	})
	require.NoError(s.t, err)
	res, err := cmd.Slice()
	require.NoError(s.t, err)
	n, m := strings.Count(settles, ":")/3, strings.Count(moves, ":")
	r := wreply{now: res[0].(int64), epoch: res[1].(int64), first: res[2].(int64), hold: res[3].(int64)}
	for i, v := range res[4:] {
		switch {
		case i < n:
			r.settles = append(r.settles, v.(int64))
		case i < n+m:
			r.moves = append(r.moves, v.(int64))
		default:
			r.codes = append(r.codes, v.(int64))
		}
	}
	return r
}

type wreq struct{ cost, maxWait int64 }

// wevent is one admission of the reference model: its instant, the amount
// the window counts, whether a caller settled it, and where Redis keeps it.
type wevent struct {
	at, amount int64
	final      bool
	gone       bool // given back
	ep, id     int64
}

// wmodel is the sliding window in its plainest form: a list of every
// admission ever made, and the rule that the admissions in any window
// (t-W, t] hold at most L, with every admission at or after the one before.
type wmodel struct {
	l, w   int64
	events []*wevent
	hold   int64 // paused until then
}

func (m *wmodel) inWindow(e *wevent, t int64) bool { return !e.gone && e.at > t-m.w && e.at <= t }

// held is what the window ending at t holds.
func (m *wmodel) held(t int64) int64 {
	var sum int64
	for _, e := range m.events {
		if m.inWindow(e, t) {
			sum += e.amount
		}
	}
	return sum
}

// admitAt is the earliest instant, no earlier than now and than the latest
// admission still in the window, at which cost fits in the window.
func (m *wmodel) admitAt(now, cost int64) int64 {
	return admitAmong(m.events, m.l, m.w, now, cost, m.hold)
}

// admitAmong is admitAt among the admissions es alone, and no earlier than
// hold.
func admitAmong(es []*wevent, l, w, now, cost, hold int64) int64 {
	held := func(t int64) int64 {
		var sum int64
		for _, e := range es {
			if !e.gone && e.at > t-w && e.at <= t {
				sum += e.amount
			}
		}
		return sum
	}
	t := max(now, hold)
	for _, e := range es {
		if !e.gone && e.at > now-w {
			t = max(t, e.at)
		}
	}
	if held(t)+cost <= l {
		return t
	}
	// The window's content only falls as t passes the admissions' ends;
	// the earliest instant it fits is one of them.
	best := int64(-1)
	for _, e := range es {
		if end := e.at + w; end > t && !e.gone && held(end)+cost <= l && (best < 0 || end < best) {
			best = end
		}
	}
	return best
}

// TestWindowScriptAgainstAReferenceModel runs random calls of the window
// script (admissions with and without a max wait, costs above the limit,
// settlements for less, refunds, give-backs, settlements of grants long
// gone, a clock that sometimes goes back) and requires every answer to be
// the model's, and the limit to hold in every window the model's
// admissions span.
func TestWindowScriptAgainstAReferenceModel(t *testing.T) {
	c := redistest.Test(t).Client(t)
	var admitted, reserved, refused, settled, movedN int
	seeds := uint64(testutil.Volume(30, 1000))
	defer func() { testutil.ReportDecisions(t, int64(seeds)*150) }()
	for seed := uint64(1); seed <= seeds; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		l := int64(1 + rng.IntN(30))
		w := int64(1_000 + rng.IntN(200_000))
		s := wscript{t: t, c: c, key: "model:" + strconv.FormatUint(seed, 10), l: l, w: w}
		m := &wmodel{l: l, w: w}
		now, seen, alive := t0, t0, false
		for step := range 150 {
			switch k := rng.IntN(20); {
			case k == 0:
				now -= int64(rng.IntN(1_000)) // late, or back
			case k < 8:
				now += int64(rng.IntN(int(w / 4)))
			case k < 14:
				now += int64(rng.IntN(int(w)))
			}
			var settles []string
			type target struct {
				idx    int
				amount int64
				final  bool
			}
			var targets []target
			for range rng.IntN(3) {
				if len(m.events) == 0 {
					break
				}
				idx := rng.IntN(len(m.events))
				e := m.events[idx]
				amount, final := int64(0), true
				switch rng.IntN(3) {
				case 0: // a settlement for less (or the same)
					amount = rng.Int64N(e.amount + 1)
				case 1: // a refund
				case 2: // a give-back, of what no caller holds
					if e.final {
						continue
					}
					final = false
				}
				fin := 0
				if final {
					fin = 1
				}
				settles = append(settles, fmt.Sprintf("%d:%d:%d:%d", e.ep, e.id, amount, fin))
				targets = append(targets, target{idx, amount, final})
			}
			// Moves of reservations ahead, which a process asks for.
			var moves []string
			var moved []int
			for i, e := range m.events {
				if !e.gone && !e.final && e.at > max(now, seen) && rng.IntN(2) == 0 {
					moves = append(moves, fmt.Sprintf("%d:%d", e.ep, e.id))
					moved = append(moved, i)
				}
			}
			var reqs []wreq
			for range 1 + rng.IntN(3) {
				r := wreq{cost: 1 + rng.Int64N(max(1, l/3)), maxWait: rng.Int64N(w / 2)}
				switch rng.IntN(8) {
				case 0:
					r.cost = l + 1
				case 1:
					r.cost = 1 + rng.Int64N(l)
				case 2:
					r.maxWait = 0
				case 3:
					r.maxWait = -1
				}
				reqs = append(reqs, r)
			}
			if alive {
				now = max(now, seen) // the key's time never goes back
			}
			var pause int64
			if rng.IntN(15) == 0 {
				pause = now + rng.Int64N(w)
				m.hold = max(m.hold, pause)
			}
			got := s.run(now, strings.Join(settles, ","), strings.Join(moves, ","), reqs, pause)
			require.Equal(t, now, got.now, "the instant decided at")
			if alive || pause > 0 {
				require.Equal(t, m.hold, got.hold, "the pause")
			}
			where := fmt.Sprintf("seed %d step %d at +%d µs", seed, step, now-t0)

			// The settlements, against the model.
			for i, tg := range targets {
				e := m.events[tg.idx]
				want := int64(1)
				switch {
				case e.gone || e.at <= now-w:
					want = 2
				case e.final:
					want = 0
				}
				require.Equal(t, want, got.settles[i], "%s: settlement %d of event %+v", where, i, *e)
				if want == 1 {
					e.amount, e.final = tg.amount, tg.final
					if !tg.final && tg.amount == 0 {
						e.gone = true
					}
					settled++
				}
			}
			// The moves: each admitted again among the admissions before it.
			for k, i := range moved {
				e := m.events[i]
				want := int64(0)
				if !e.gone && !e.final && e.at > now {
					at := admitAmong(m.events[:i], l, w, now, e.amount, m.hold)
					if at < e.at {
						want = at
					}
				}
				require.Equal(t, want, got.moves[k], "%s: move %d of event %+v", where, k, *e)
				if want > 0 {
					e.at = want
					movedN++
				}
			}
			// The requests, in order.
			id := got.first
			for i, r := range reqs {
				if r.cost > l {
					require.Zero(t, got.codes[i], "%s: request %d above the limit", where, i)
					continue
				}
				at := m.admitAt(now, r.cost)
				require.Positive(t, at, "%s: the model found no instant", where)
				if r.maxWait >= 0 && at-now > r.maxWait {
					require.Equal(t, min(now-at, -1), got.codes[i], "%s: request %d %+v refused", where, i, r)
					refused++
					continue
				}
				if at != got.codes[i] { // the model's admissions, to read the failure by
					for _, e := range m.events {
						t.Logf("event %+v (at +%d)", *e, e.at-t0)
					}
					t.Logf("moves %v got %v", moves, got.moves)
				}
				require.Equal(t, at, got.codes[i], "%s: request %d %+v", where, i, r)
				m.events = append(m.events, &wevent{at: at, amount: r.cost, ep: got.epoch, id: id})
				id++
				admitted++
				if at > now {
					reserved++
				}
			}
			// The key lives while anything is in the window, or a pause
			// is ahead.
			alive = m.hold > now
			for _, e := range m.events {
				alive = alive || (!e.gone && e.at > now-w)
			}
			if !alive {
				m.hold = 0 // the key is gone, its pause with it
			}
			seen = now
			// The limit holds in every window: the content changes only
			// at an admission's instant, so those are the windows to check.
			for _, e := range m.events {
				require.LessOrEqual(t, m.held(e.at), l, "%s: the window ending at +%d µs", where, e.at-t0)
			}
		}
	}
	t.Logf("%d admitted (%d reserved ahead), %d refused for their max wait, %d settlements applied, %d reservations moved", admitted, reserved, refused, settled, movedN)
	require.Positive(t, movedN)
	require.Positive(t, reserved)
	require.Positive(t, refused)
	require.Positive(t, settled)
}
