package configerr_test

import (
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/configerr"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestAConfigurationErrorNamesItsPackageAndMatchesTheOneSentinel(t *testing.T) {
	err := configerr.Errorf("keyed", "shards must be between 1 and %d, got %d", 1024, -1)
	assert.EqualError(t, err, "keyed: invalid configuration: shards must be between 1 and 1024, got -1")
	assert.ErrorIs(t, err, configerr.ErrInvalid)
	var ce *configerr.Error
	assert.True(t, errors.As(err, &ce))
	assert.Equal(t, "keyed", ce.Pkg)
}

func TestAConfigurationErrorKeepsTheErrorItWraps(t *testing.T) {
	err := configerr.Errorf("httplimit", "reading the list: %w", io.ErrUnexpectedEOF)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.ErrorIs(t, err, configerr.ErrInvalid)
	assert.NotErrorIs(t, configerr.Errorf("x", "y"), io.ErrUnexpectedEOF)
}
