package ownermodel

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// Each check must refuse the log that breaks its rule and pass the one
// that keeps it: a checker that passes everything would pass every owner.

const ms = time.Millisecond

// testLog is GCRA 10/s burst 3, one domain unless said.
func testLog(calls ...*Call) *Log {
	l := &Log{Config: Config{Rate: algorithms.PerSecond(10), Burst: 3, Domains: 1}, Closed: time.Hour}
	for i, c := range calls {
		c.Seq = i + 1
		if c.Granted {
			c.Exact, c.Returned = true, c.At
		}
		l.Calls = append(l.Calls, c)
	}
	l.Stats = l.want(0)
	return l
}

func grant(dom int, cost int64, arrived, at time.Duration) *Call {
	return &Call{Kind: KindAcquire, Dom: dom, Cost: cost, Arrived: arrived, Granted: true, At: at}
}

func wantErr(t *testing.T, err error, what string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), what) {
		t.Fatalf("got %v, want a %q error", err, what)
	}
}

func TestTheModelRefusesAGrantBeyondTheBurst(t *testing.T) {
	l := testLog(grant(0, 3, 0, 0), grant(0, 1, 0, 50*ms))
	wantErr(t, l.checkModel(), "model")
	l = testLog(grant(0, 3, 0, 0), grant(0, 1, 0, 100*ms), grant(0, 1, 0, 200*ms))
	if err := l.checkModel(); err != nil {
		t.Fatal(err)
	}
}

func TestTheModelChargesDebtsAndKeepsTheUnitsOwedAcrossARateChange(t *testing.T) {
	l := testLog(grant(0, 3, 0, 0), grant(0, 1, 0, 150*ms))
	l.Debts = []Debt{{At: 10 * ms, Units: 1}}
	wantErr(t, l.checkModel(), "model") // the debt is owed until 400ms
	l = testLog(grant(0, 3, 0, 0), grant(0, 3, 0, 150*ms))
	l.Rates = []RateChange{{At: 0, Rate: algorithms.PerSecond(20)}}
	if err := l.checkModel(); err != nil {
		t.Fatal(err) // 3 units owed at 20/s are paid by 150ms
	}
}

func TestTheBoundHoldsOverEveryWindow(t *testing.T) {
	l := testLog(grant(0, 2, 0, 0), grant(0, 2, 0, 99*ms))
	wantErr(t, l.checkBound(), "bound")
	l = testLog(grant(0, 2, 0, 0), grant(0, 2, 0, 100*ms))
	if err := l.checkBound(); err != nil {
		t.Fatal(err)
	}
}

func TestFIFOIsBrokenByALaterArrivalGrantedFirst(t *testing.T) {
	wantErr(t, testLog(grant(0, 1, 0, 20*ms), grant(0, 1, ms, 10*ms)).checkFIFO(), "FIFO")
	cancelled := &Call{Kind: KindAcquire, Cost: 3, Arrived: 0, Canceled: 10 * ms, Err: context.Canceled}
	if err := testLog(cancelled, grant(0, 1, ms, 10*ms)).checkFIFO(); err != nil {
		t.Fatal(err) // a waiter that left at the instant of the grant had left
	}
	other := testLog(grant(0, 1, 0, 20*ms), grant(1, 1, ms, 10*ms))
	other.Domains = 2
	if err := other.checkFIFO(); err != nil {
		t.Fatal(err) // another key
	}
	try := &Call{Kind: KindTry, Dom: 1, Cost: 1, Arrived: 5 * ms, Granted: true, At: 5 * ms}
	lanes := testLog(grant(0, 1, 0, 20*ms), try)
	lanes.Domains, lanes.Shared = 2, true
	wantErr(t, lanes.checkFIFO(), "FIFO") // a TryAcquire passes no lane's waiter
}

func TestNothingIsGrantedWhileAPauseHolds(t *testing.T) {
	l := testLog(grant(0, 1, 0, 30*ms))
	l.Pauses = []Pause{{At: 10 * ms, Until: 50 * ms}}
	wantErr(t, l.checkPauses(), "pause")
	l.Pauses = []Pause{{At: 10 * ms, Until: 30 * ms}}
	if err := l.checkPauses(); err != nil {
		t.Fatal(err)
	}
}

func TestBackloggedLanesShareByWeight(t *testing.T) {
	// Lanes 0 and 1 of weights 1 and 1 both wait from 0 to 2s; lane 0
	// gets 20 grants of 1, lane 1 none until the end: 20 is beyond
	// twice Golestani's 3/1 + 3/1.
	calls := []*Call{{Kind: KindAcquire, Dom: 1, Cost: 1, Arrived: 0, Granted: true, At: 2 * time.Second}}
	for i := range 20 {
		calls = append(calls, grant(0, 1, 0, time.Duration(i+1)*50*ms))
	}
	l := testLog(calls...)
	l.Domains, l.Shared, l.Weights = 2, true, []int{1, 1}
	_, err := l.checkShares()
	wantErr(t, err, "shares")
	l.Weights = []int{9, 1}
	if _, err := l.checkShares(); err != nil {
		t.Fatal(err)
	}
}

func TestStatsMustBeWhatTheCallsAddUpTo(t *testing.T) {
	l := testLog(grant(0, 1, 0, 0), &Call{Kind: KindTry, Cost: 1, Err: permits.RetryLater(ms), Returned: 0})
	if err := l.checkStats(); err != nil {
		t.Fatal(err)
	}
	l.Stats.Rejected = 0
	wantErr(t, l.checkStats(), "stats")
}

func TestRetryAfterIsAtLeastTheWaitLessTheNewcomersCost(t *testing.T) {
	try := &Call{Kind: KindTry, Cost: 1, Err: permits.RetryLater(10 * ms), Retry: 10 * ms, HasRetry: true}
	late := grant(0, 1, 0, 250*ms)
	late.ProbeOf = 1
	_, err := testLog(try, late).checkRetryAfter()
	wantErr(t, err, "RetryAfter") // 250ms less 100ms is more than 10ms
	soon := grant(0, 1, 0, 110*ms)
	soon.ProbeOf = 1
	if n, err := testLog(try, soon).checkRetryAfter(); err != nil || n != 1 {
		t.Fatalf("checked %d: %v", n, err)
	}
}

// generous grants everything at once: an owner without a limit.
type generous struct{ granted uint64 }

func (g *generous) Acquire(ctx context.Context, _ int, _ int64) (Grant, error) {
	if err := ctx.Err(); err != nil {
		return Grant{}, err
	}
	g.granted++
	return Grant{At: time.Now()}, nil
}

func (g *generous) TryAcquire(int, int64) (Grant, error) {
	g.granted++
	return Grant{At: time.Now()}, nil
}

func (g *generous) Stats() permits.Stats { return permits.Stats{Granted: g.granted} }
func (g *generous) Close() error         { return nil }

func TestAnOwnerWithoutALimitFailsTheModel(t *testing.T) {
	cfg := Config{Rate: algorithms.PerSecond(10), Burst: 3, Domains: 1, Steps: 50}
	log := Play(t, cfg, 1, func(*testing.T, *StallClock) Subject { return &generous{} })
	_, err := log.Check()
	wantErr(t, err, "model")
}
