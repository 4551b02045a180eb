package budget_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/internal/testutil"
)

// The first refusal writes the exhausted line, the first retry allowed
// after it the recovered line; the refusals between, and the calls
// around, write none.
func TestLoggerTellsExhaustionAndRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs, logger := testutil.NewLogs()
		t0 := time.Now()
		b, err := budget.New(budget.WithName("api"), budget.WithMinRetriesPerSec(0),
			budget.WithPercentCanRetry(0.5), budget.WithLogger(logger))
		require.NoError(t, err)
		b.Deposit()
		b.Deposit()
		require.True(t, b.TryWithdraw())
		time.Sleep(time.Second)
		for range 1000 {
			require.False(t, b.TryWithdraw())
		}
		time.Sleep(time.Second)
		b.Deposit()
		b.Deposit()
		require.True(t, b.TryWithdraw())
		lines := logs.Lines(t)
		require.Len(t, lines, 2)
		assert.Equal(t, map[string]any{
			"time": t0.Add(time.Second).Format(time.RFC3339Nano), "level": "WARN",
			"msg": "sluice: retry budget exhausted", "sluice.budget.name": "api",
			"balance": float64(0), "deposits": float64(2), "withdrawals": float64(1),
		}, lines[0])
		assert.Equal(t, map[string]any{
			"time": t0.Add(2 * time.Second).Format(time.RFC3339Nano), "level": "INFO",
			"msg": "sluice: retry budget recovered", "sluice.budget.name": "api",
			"balance": float64(1), "deposits": float64(4), "withdrawals": float64(1),
		}, lines[1])
	})
}

// A budget that always has room writes nothing for a thousand requests
// and retries.
func TestLoggerWritesNoLineWhileTheBudgetHolds(t *testing.T) {
	logs, logger := testutil.NewLogs()
	b, err := budget.New(budget.WithPercentCanRetry(1), budget.WithLogger(logger))
	require.NoError(t, err)
	for range 1000 {
		b.Deposit()
		require.True(t, b.TryWithdraw())
	}
	assert.Empty(t, logs.Messages(t))
}
