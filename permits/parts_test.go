package permits_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// refunderOnly is a Refunder that is not a Settler, so that MaxWait wraps it
// in its refunding form; it admits everything.
type refunderOnly struct{ name string } // named, so that two are different values

func (r *refunderOnly) Acquire(ctx context.Context, cost int64) (permits.Permit, error) {
	return permits.Unlimited.Acquire(ctx, cost)
}

func (r *refunderOnly) TryAcquire(cost int64) (permits.Permit, error) {
	return permits.Unlimited.TryAcquire(cost)
}

func (r *refunderOnly) AcquireGrant(ctx context.Context, cost int64) (permits.Grant, error) {
	p, err := r.Acquire(ctx, cost)
	return permits.Grant{Permit: p}, err
}

func (r *refunderOnly) TryAcquireGrant(cost int64) (permits.Grant, error) {
	p, err := r.TryAcquire(cost)
	return permits.Grant{Permit: p}, err
}

func (r *refunderOnly) Refund(permits.Grant) bool { return false }

// Each finds every part, in order, through All (nested and flattened),
// FixedCost and the three forms of MaxWait, and nothing else.
func TestEachVisitsEveryPart(t *testing.T) {
	requests := rateLimiter(t, algorithms.PerSecond(10), 1) // a Settler
	tokens := rateLimiter(t, algorithms.PerSecond(1000), 1000)
	pool := newPool(t, 2) // neither Refunder nor Settler
	other := &refunderOnly{name: "other"}

	lim := permits.MaxWait(permits.All(
		permits.FixedCost(requests, 1),
		permits.All(permits.MaxWait(tokens, time.Second), permits.MaxWait(other, time.Second)),
		permits.FixedCost(permits.MaxWait(pool, time.Second), 1),
	), time.Second)
	var got []permits.Limiter
	permits.Each(lim, func(l permits.Limiter) { got = append(got, l) })
	assert.Equal(t, []permits.Limiter{requests, tokens, other, pool}, got)

	got = nil
	permits.Each(requests, func(l permits.Limiter) { got = append(got, l) })
	assert.Equal(t, []permits.Limiter{requests}, got, "a limiter is its only part")

	permits.Each(nil, func(permits.Limiter) { t.Fatal("a nil limiter has no parts") })
}

// The parts Each finds are the very limiters, so a method beyond Limiter
// reaches them: a pause on every part that has one, as an HTTP client does
// when the API says 429.
func ExampleEach() {
	perRequest, _ := algorithms.NewGCRA(algorithms.PerSecond(10), 1)
	perToken, _ := algorithms.NewGCRA(algorithms.PerMinute(100_000), 10_000)
	requests, tokens := actor.MustNew(perRequest), actor.MustNew(perToken)
	defer requests.Close()
	defer tokens.Close()
	conns, _ := actor.NewPool(4)
	defer conns.Close()
	lim := permits.All(permits.FixedCost(requests, 1), tokens, permits.FixedCost(conns, 1))

	paused := 0
	permits.Each(lim, func(part permits.Limiter) {
		if p, ok := part.(interface{ Pause(time.Time) error }); ok && p.Pause(time.Now().Add(time.Second)) == nil {
			paused++
		}
	})
	fmt.Println("paused", paused, "of 3 parts (the pool has no pause)")
	_, err := tokens.TryAcquire(1)
	fmt.Println(errors.Is(err, permits.ErrRateLimited))
	// Output:
	// paused 2 of 3 parts (the pool has no pause)
	// true
}
