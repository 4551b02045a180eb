package redislimit_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// Callers that give up at the very instant their slot falls due race the
// owner's answer, and each race has one winner (request.go). Reply
// channels are reused once their caller has returned, so a signal left in
// one, or sent to one after its caller gave up, would reach the next
// caller to use it and return that caller early, without an answer: here
// it would show as an error no caller may see, or as Stats that count a
// caller twice or not at all.
func TestCallersGivingUpAsTheirSlotFallsDueEachGetOneAnswer(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		l := vlimiter(t, c, "race", algorithms.PerSecond(1000), 1)
		const callers, rounds = 8, 40
		var acquires, tries outcomes
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(i), 7))
				for range rounds {
					// Slots fall due on whole ms: so do the deadlines and
					// the cancellations.
					d := time.Duration(1+rng.IntN(5)) * time.Millisecond
					ctx, cancel := context.WithTimeout(context.Background(), d)
					if rng.IntN(2) == 0 {
						ctx, cancel = context.WithCancel(context.Background())
						time.AfterFunc(d, cancel)
					}
					_, err := l.Acquire(ctx, 1)
					cancel()
					acquires.count(t, err)
					if rng.IntN(4) == 0 {
						_, err := l.TryAcquire(1) // reuses a channel at once
						tries.count(t, err)
					}
				}
			})
		}
		wg.Wait()
		st := l.Stats()
		assert.Equal(t, uint64(callers*rounds), acquires.granted.Load()+acquires.limited.Load()+acquires.canceled.Load())
		assert.Equal(t, acquires.granted.Load()+tries.granted.Load(), st.Granted)
		assert.Equal(t, acquires.limited.Load()+tries.limited.Load(), st.Rejected)
		assert.Equal(t, acquires.canceled.Load(), st.Canceled)
		assert.Zero(t, st.Waiting)
		assert.Positive(t, acquires.granted.Load())
		assert.Positive(t, acquires.canceled.Load())
	})
}

// outcomes counts what calls returned.
type outcomes struct{ granted, limited, canceled atomic.Uint64 }

func (o *outcomes) count(t *testing.T, err error) {
	switch {
	case err == nil:
		o.granted.Add(1)
	case errors.Is(err, permits.ErrRateLimited):
		o.limited.Add(1)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		o.canceled.Add(1)
	default:
		t.Errorf("unexpected error: %v", err)
	}
}
