package grpclimit

import (
	"context"
	"errors"
	"time"

	"github.com/sluicehq/sluice/internal/configerr"
)

// ServerOption configures NewServer. Options are values; a nil one is
// ignored.
type ServerOption interface{ applyServer(*serverConfig) }

type serverConfig struct {
	policy  string
	cost    func(ctx context.Context, fullMethod string) int64
	wait    bool
	maxWait time.Duration
	exempt  func(ctx context.Context, fullMethod string) bool
	err     error
}

type serverOptionFunc func(*serverConfig)

func (f serverOptionFunc) applyServer(c *serverConfig) { f(c) }

// WithPolicy names the limit in a refusal's message and QuotaFailure
// ("default" if not given). An empty name is an error.
func WithPolicy(name string) ServerOption {
	return serverOptionFunc(func(c *serverConfig) {
		if name == "" {
			c.err = errors.Join(c.err, configerr.Errorf("grpclimit", "an empty policy name"))
			return
		}
		c.policy = name
	})
}

// WithCost sets what a call costs its key: 1 by default. A cost below 1
// fails the call with codes.Internal; one above what the key can ever
// admit with codes.ResourceExhausted and no RetryInfo, since no wait
// helps. nil is ignored.
func WithCost(cost func(ctx context.Context, fullMethod string) int64) ServerOption {
	return serverOptionFunc(func(c *serverConfig) {
		if cost != nil {
			c.cost = cost
		}
	})
}

// WithWait makes a call that would be refused wait its turn instead, in
// FIFO order among the calls of its key, within its deadline and for at
// most max (a negative max: as long as its deadline allows; 0: never
// wait). A call whose predicted wait ends past its deadline, or past max,
// is refused at once with the RetryInfo of that wait; a call cancelled
// while it waits leaves the queue and gets codes.Canceled.
func WithWait(max time.Duration) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.wait, c.maxWait = true, max })
}

// WithExemptions passes the calls for which exempt returns true without
// counting them: health checks, reflection, internal callers (see
// ExemptMethods). nil exempts nothing.
func WithExemptions(exempt func(ctx context.Context, fullMethod string) bool) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.exempt = exempt })
}

// ExemptMethods returns an exemption for the calls of the given full
// methods ("/grpc.health.v1.Health/Check"), for WithExemptions.
func ExemptMethods(fullMethods ...string) func(ctx context.Context, fullMethod string) bool {
	set := make(map[string]bool, len(fullMethods))
	for _, m := range fullMethods {
		set[m] = true
	}
	return func(_ context.Context, fullMethod string) bool { return set[fullMethod] }
}
