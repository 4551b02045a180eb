package redislimit_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/redislimit/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(redistest.QuietLog())) }
