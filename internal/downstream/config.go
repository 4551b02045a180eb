package downstream

import (
	"math/rand/v2"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/internal/configerr"
)

// Service is a distribution of service times: uniform in [Mean−Spread,
// Mean+Spread], or, with Exp, exponential of mean Mean (Spread unused).
type Service struct {
	Mean, Spread time.Duration
	Exp          bool
}

// draw is one service time, at least 1 ns.
func (s Service) draw(rng *rand.Rand) time.Duration {
	switch {
	case s.Exp:
		return max(time.Duration(rng.ExpFloat64()*float64(s.Mean)), 1)
	case s.Spread > 0:
		return max(s.Mean-s.Spread+time.Duration(rng.Int64N(int64(2*s.Spread)+1)), 1)
	}
	return s.Mean
}

// Phase is the downstream from instant At on (since the run's start):
// Servers serving at once, each request for a Service time, and a queue of
// Queue requests in front of them (0: none; a request that finds every
// server busy is refused).
type Phase struct {
	At      time.Duration
	Servers int
	Service Service
	Queue   int
}

// MaxServers bounds Phase.Servers and Phase.Queue.
const MaxServers = 1 << 20

// Config is a downstream: its phases, the first at 0, the others in order
// of At.
type Config struct{ Phases []Phase }

// Pool is the limit in front of the downstream. With a Controller, the
// limit starts at Initial and moves in [Floor, Ceiling]; without one it
// stays at Initial: a static limit.
type Pool struct {
	Name                    string // for reports and charts
	Controller              actor.Controller
	Floor, Initial, Ceiling int64
}

// validate checks the configuration; its errors match
// permits.ErrInvalidConfig and name the phase and field.
func (c Config) validate() error {
	if len(c.Phases) == 0 {
		return configerr.Errorf("downstream", "no phases: a downstream needs at least one")
	}
	for i, p := range c.Phases {
		switch {
		case i == 0 && p.At != 0:
			return configerr.Errorf("downstream", "the first phase must start at 0, got %v", p.At)
		case i > 0 && p.At <= c.Phases[i-1].At:
			return configerr.Errorf("downstream", "phase %d starts at %v, not after the one before (%v)", i, p.At, c.Phases[i-1].At)
		case p.Servers < 1 || p.Servers > MaxServers:
			return configerr.Errorf("downstream", "phase %d: servers must be in [1, %d], got %d", i, MaxServers, p.Servers)
		case p.Queue < 0 || p.Queue > MaxServers:
			return configerr.Errorf("downstream", "phase %d: queue must be in [0, %d], got %d", i, MaxServers, p.Queue)
		case p.Service.Mean <= 0:
			return configerr.Errorf("downstream", "phase %d: the service time must be positive, got %v", i, p.Service.Mean)
		case p.Service.Spread < 0 || p.Service.Spread > p.Service.Mean:
			return configerr.Errorf("downstream", "phase %d: the spread must be in [0, %v], got %v", i, p.Service.Mean, p.Service.Spread)
		}
	}
	return nil
}

func (p Pool) validate() error {
	if !(1 <= p.Floor && p.Floor <= p.Initial && p.Initial <= p.Ceiling && p.Ceiling < 1<<31) {
		return configerr.Errorf("downstream", "pool %q: limits must be 1 ≤ floor ≤ initial ≤ ceiling < 2^31, got %d, %d, %d",
			p.Name, p.Floor, p.Initial, p.Ceiling)
	}
	return nil
}
