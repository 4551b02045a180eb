package metricsrc_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/metricsrc"
	"github.com/sluicehq/sluice/permits"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A set of sources is refused, as a configuration error that names the
// adapter, when it is empty, holds one its constructor refused or none
// made, or names two of a kind alike; kinds apart, a name may repeat.
func TestASetOfSourcesKeepsTheAdaptersRules(t *testing.T) {
	made := func(kind, name string) metricsrc.Ident { return metricsrc.Ident{Kind: kind, Name: name, Made: true} }
	refused := errors.New("refused by its constructor")
	for name, c := range map[string]struct {
		ids  []metricsrc.Ident
		want error
	}{
		"none":           {nil, permits.ErrInvalidConfig},
		"refused":        {[]metricsrc.Ident{{Kind: "limiter", Name: "a", Err: refused, Made: true}}, refused},
		"not made":       {[]metricsrc.Ident{{}}, permits.ErrInvalidConfig},
		"one name twice": {[]metricsrc.Ident{made("limiter", "a"), made("limiter", "a")}, permits.ErrInvalidConfig},
		"kinds apart":    {[]metricsrc.Ident{made("limiter", "a"), made("breaker", "a")}, nil},
	} {
		err := metricsrc.Check("sluiceprom", "NewCollector", c.ids)
		if c.want == nil {
			assert.NoError(t, err, name)
			continue
		}
		assert.ErrorIs(t, err, c.want, name)
		if c.want == permits.ErrInvalidConfig {
			assert.Contains(t, err.Error(), "sluiceprom", name)
		}
	}
}
