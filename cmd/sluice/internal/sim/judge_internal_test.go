package sim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
)

// TestSlidingJudgeIsSlidingWindow: the ring that judges admissions against
// a sliding upstream gives algorithms.SlidingWindow's verdicts, instant for
// instant, on random streams with bursts, ties and costs.
func TestSlidingJudgeIsSlidingWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 300 {
		up := spec.Limit{Kind: spec.Sliding, Rate: algorithms.Rate{Count: 1 + rng.Int64N(20), Per: time.Duration(1+rng.IntN(1000)) * time.Millisecond}}
		j, err := newJudge(up, clock{Start.UnixNano()})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := j.(*slidingJudge); !ok {
			t.Fatalf("newJudge(%v) = %T, want the ring", up, j)
		}
		ref, _ := algorithms.NewSlidingWindow(up.Rate)
		var at int64
		for i := range 2000 {
			if rng.IntN(3) > 0 { // a third of the admissions share an instant
				at += rng.Int64N(int64(up.Rate.Per) / 4)
			}
			cost := 1 + rng.Int64N(5)
			want := ref.AllowAt(t0(at), cost).Allowed
			if got := j.admit(at, cost); got != want {
				t.Fatalf("trial %d (%v) step %d: the ring says %v, SlidingWindow %v", trial, up, i, got, want)
			}
		}
	}
}

func t0(ns int64) time.Time { return clock{Start.UnixNano()}.t(ns) }
