package permits_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/retry"
)

// TestEveryConfigurationErrorMatchesTheOneSentinel: one errors.Is with
// permits.ErrInvalidConfig matches a bad configuration of any package,
// the message says which package and what was wrong, and the older
// sentinels are that same error.
func TestEveryConfigurationErrorMatchesTheOneSentinel(t *testing.T) {
	second := func(_ any, err error) error { return err }
	cases := []struct {
		prefix string
		err    error
	}{
		{"sluice: invalid configuration: ", second(algorithms.NewGCRA(algorithms.PerSecond(0), 1))},
		{"sluice: invalid configuration: ", second(algorithms.ParseRate("10/fortnight"))},
		{"actor: invalid configuration: ", second(actor.NewPool(0))},
		{"actor: invalid configuration: ", second(actor.New(nil))},
		{"keyed: invalid configuration: ", second(keyed.New(func(string) (algorithms.Algorithm, error) { return nil, nil }, keyed.WithShards(-1)))},
		{"retry: invalid configuration: ", second(retry.New(nil))},
		{"breaker: invalid configuration: ", second(breaker.New(breaker.WithConsecutiveFailures(0)))},
		{"budget: invalid configuration: ", second(budget.New(budget.WithPercentCanRetry(-1)))},
		{"httplimit: invalid configuration: ", second(httplimit.NewTransport(nil))},
	}
	for _, c := range cases {
		if assert.Error(t, c.err, c.prefix) {
			assert.ErrorIs(t, c.err, permits.ErrInvalidConfig, c.err.Error())
			assert.Contains(t, c.err.Error(), c.prefix)
		}
	}
	l := rateLimiter(t, algorithms.PerSecond(1), 1)
	assert.ErrorIs(t, l.SetBurst(0), permits.ErrInvalidConfig)
	_, err := l.Lane("", 1)
	assert.ErrorIs(t, err, permits.ErrInvalidConfig)

	//lint:ignore SA1019 the old names must stay the one error
	olds := []error{algorithms.ErrInvalidConfig, keyed.ErrInvalidConfig, retry.ErrInvalidConfig, breaker.ErrInvalidConfig, budget.ErrInvalidConfig, httplimit.ErrInvalidConfig}
	for _, old := range olds {
		assert.True(t, errors.Is(old, permits.ErrInvalidConfig) && old == permits.ErrInvalidConfig)
	}
}
