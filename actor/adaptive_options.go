package actor

import "github.com/sluicehq/sluice/internal/configerr"

// AdaptiveOption configures an AdaptivePool. WithName, WithMaxQueue and
// WithObserver are ones too.
type AdaptiveOption interface{ applyAdaptive(*adaptiveConfig) }

type adaptiveConfig struct {
	config
	floor, initial, ceiling int64
	noQueue                 bool
}

func (o CommonOption) applyAdaptive(c *adaptiveConfig) { o.f(&c.config) }

type adaptiveOption func(*adaptiveConfig)

func (f adaptiveOption) applyAdaptive(c *adaptiveConfig) { f(c) }

// WithLimits sets the range the limit moves in and where it starts: 1 ≤
// floor ≤ initial ≤ ceiling < 2^31. The default is 1, 20, 1000. The floor
// is also the largest cost one Acquire may ask for.
func WithLimits(floor, initial, ceiling int64) AdaptiveOption {
	return adaptiveOption(func(c *adaptiveConfig) { c.floor, c.initial, c.ceiling = floor, initial, ceiling })
}

// WithoutQueue makes Acquire refuse at once, as TryAcquire does, when the
// limit is reached, instead of waiting: load shedding, for a server whose
// callers would rather retry elsewhere than queue.
var WithoutQueue AdaptiveOption = adaptiveOption(func(c *adaptiveConfig) { c.noQueue = true })

func (c *adaptiveConfig) validate(ctl Controller) error {
	if ctl == nil {
		return configerr.Errorf("actor", "an adaptive pool needs a controller, got nil")
	}
	if !(1 <= c.floor && c.floor <= c.initial && c.initial <= c.ceiling && c.ceiling <= maxCeiling) {
		return configerr.Errorf("actor", "adaptive limits must be 1 ≤ floor ≤ initial ≤ ceiling < 2^31, got %d, %d, %d",
			c.floor, c.initial, c.ceiling)
	}
	if v, ok := ctl.(validator); ok {
		return v.validate()
	}
	return nil
}
