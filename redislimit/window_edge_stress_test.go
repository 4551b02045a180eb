package redislimit_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/redislimit"
)

type use struct {
	at     time.Time
	amount int64
	proc   int
}

// maxWindow returns the most any window (t-w, t] ending at a grant
// holds, and where.
func maxWindow(uses []use, w time.Duration) (int64, time.Time) {
	sort.Slice(uses, func(i, j int) bool { return uses[i].at.Before(uses[j].at) })
	var best int64
	var at time.Time
	for i := range uses {
		var n int64
		for j := i; j >= 0 && uses[j].at.After(uses[i].at.Add(-w)); j-- {
			n += uses[j].amount
		}
		if n > best {
			best, at = n, uses[i].at
		}
	}
	return best, at
}

// Three processes on one key, each with callers that acquire estimates,
// give up, settle for less and refund: the settled amounts in any window
// never exceed the limit, the window is filled to the limit, and each
// process's Stats count what its callers saw.
func TestWindowEdgeThreeProcessesSettlingNeverExceedTheLimit(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		settles := seed <= 2 || seed >= 5 // seeds 3 and 4 never settle: the window must fill exactly
		pauses := seed >= 5
		inBubble(t, func(t *testing.T, c *redis.Client) {
			limit := algorithms.Rate{Count: 20, Per: time.Second}
			var ws []*redislimit.Window
			for range 3 {
				ws = append(ws, vwindow(t, c, "stress", limit))
			}
			begin := time.Now()
			end := begin.Add(6 * time.Second)
			var mu sync.Mutex
			var uses []use
			type tally struct{ granted, canceled, limited uint64 }
			tallies := make([]tally, 3)
			type span struct{ from, until time.Time }
			paused := make([][]span, 3)
			var wg sync.WaitGroup
			if pauses {
				for p, w := range ws {
					rng := rand.New(rand.NewPCG(seed, uint64(100+p)))
					wg.Go(func() {
						for time.Now().Before(end) {
							time.Sleep(time.Duration(200+rng.IntN(1500)) * time.Millisecond)
							until := time.Now().Add(time.Duration(1+rng.IntN(400)) * time.Millisecond)
							require.NoError(t, w.Pause(until))
							mu.Lock()
							paused[p] = append(paused[p], span{time.Now(), until})
							mu.Unlock()
						}
					})
				}
			}
			for p, w := range ws {
				for k := range 6 {
					rng := rand.New(rand.NewPCG(seed, uint64(p*10+k)))
					wg.Go(func() {
						for time.Now().Before(end) {
							cost := 1 + rng.Int64N(6)
							if !settles {
								cost = 1 // demand always ahead of room: the window fills exactly
							}
							ctx, cancel := context.Background(), context.CancelFunc(func() {})
							switch rng.IntN(4) {
							case 0:
								ctx, cancel = context.WithTimeout(context.Background(), time.Duration(1+rng.IntN(1500))*time.Millisecond)
							case 1:
								ctx, cancel = context.WithCancel(context.Background())
								time.AfterFunc(time.Duration(1+rng.IntN(1500))*time.Millisecond, cancel)
							}
							var g permits.Grant
							var err error
							if rng.IntN(8) == 0 {
								g, err = w.TryAcquireGrant(cost)
							} else {
								g, err = w.AcquireGrant(ctx, cost)
							}
							cancel()
							mu.Lock()
							switch {
							case err == nil:
								tallies[p].granted++
							case errors.Is(err, permits.ErrRateLimited):
								tallies[p].limited++
							case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
								tallies[p].canceled++
							default:
								t.Errorf("unexpected error %v", err)
							}
							mu.Unlock()
							if err != nil {
								time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
								continue
							}
							amount := cost
							time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
							choice := rng.IntN(4)
							if !settles {
								choice = 3
							}
							switch choice {
							case 0:
								a := rng.Int64N(cost + 1)
								require.NoError(t, w.Settle(g, a))
								if time.Since(g.At) < limit.Per {
									amount = a
								}
							case 1:
								if w.Refund(g) {
									amount = 0
								}
							}
							mu.Lock()
							uses = append(uses, use{at: g.At, amount: amount, proc: p})
							mu.Unlock()
						}
					})
				}
			}
			wg.Wait()
			for _, u := range uses {
				for _, sp := range paused[u.proc] {
					if !u.at.Before(sp.from) && u.at.Before(sp.until) {
						t.Errorf("process %d granted at %v, inside its pause [%v, %v)", u.proc, u.at.Sub(begin), sp.from.Sub(begin), sp.until.Sub(begin))
					}
				}
			}
			n, at := maxWindow(uses, limit.Per)
			t.Logf("seed %d: %d grants, fullest window %d ending at %v", seed, len(uses), n, at.Sub(begin))
			assert.LessOrEqual(t, n, limit.Count, "settled units in one window")
			if !settles {
				assert.Equal(t, limit.Count, n, "the limit, exactly, in the fullest window")
			}
			for p, w := range ws {
				st := w.Stats()
				t.Logf("process %d: %+v", p, st)
				assert.Equal(t, tallies[p].granted, st.Granted, "process %d", p)
				assert.Equal(t, tallies[p].canceled, st.Canceled, "process %d", p)
				assert.Equal(t, tallies[p].limited, st.Rejected, "process %d", p)
				assert.Zero(t, st.Waiting, "process %d", p)
			}
		})
	}
}
